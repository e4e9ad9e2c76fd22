using System;
using System.Collections.Generic;
using System.Threading;
using System.Threading.Tasks;
using Frameproof.Codec;
using NUnit.Framework;

namespace Frameproof.Tests
{
    sealed class Log : IMatchObserver
    {
        public readonly List<string> Events = new List<string>();
        public void OnReply(RequestId id, object state, byte flag, byte sequence, ReadOnlySpan<byte> payload)
        { Events.Add("reply " + id + " flag " + flag.ToString("X2") + " seq " + sequence + " " + T.ToHex(payload.ToArray())); }
        public void OnTimeout(RequestId id, object state) { Events.Add("timeout " + id); }
        public void OnFailed(RequestId id, object state) { Events.Add("failed " + id); }
        public void OnUnmatched(byte flag, byte sequence, ReadOnlySpan<byte> payload) { Events.Add("unmatched seq " + sequence); }
        public string Joined { get { return string.Join("; ", Events); } }
    }

    [TestFixture]
    public class StandardMatcherTests
    {
        [Test]
        public void Sequence_StartsAt1_AndWrapsThrough0()
        {
            var m = new StandardMatcher(new Log());
            var seen = new List<byte>();
            for (int i = 0; i < 258; i++)
            {
                byte seq;
                if (i < 256) { Assert.IsTrue(m.TryRequest(new RequestId(i), null, 0, out seq)); seen.Add(seq); m.OnFrame(0x81, seq, default(ReadOnlySpan<byte>)); }
                else { Assert.IsTrue(m.TryRequest(new RequestId(i), null, 0, out seq)); seen.Add(seq); }
            }
            Assert.AreEqual(1, seen[0]);
            Assert.AreEqual(255, seen[254]);
            Assert.AreEqual(0, seen[255]);
            Assert.AreEqual(1, seen[256]);
            Assert.AreEqual(2, seen[257]);
        }

        [Test]
        public void PendingSequence_RefusesSend_WithoutAdvancingCounter()
        {
            var log = new Log();
            var m = new StandardMatcher(log);
            byte seq;
            for (int i = 0; i < 256; i++) Assert.IsTrue(m.TryRequest(new RequestId(i), null, 0, out seq));
            Assert.IsFalse(m.TryRequest(new RequestId(256), null, 0, out seq), "STD-SEQ-3");
            Assert.AreEqual(1, seq);
            Assert.IsFalse(m.TryRequest(new RequestId(257), null, 0, out seq));
            m.OnFrame(0x81, 1, T.Hex("AA"));
            Assert.IsTrue(m.TryRequest(new RequestId(258), null, 0, out seq));
            Assert.AreEqual(1, seq, "counter did not advance on the refusals");
            Assert.AreEqual("reply 0 flag 81 seq 1 AA", log.Joined);
        }

        [Test]
        public void RepliesMatchBySequence_InAnyOrder_UnmatchedAndRequestsIgnored()
        {
            var log = new Log();
            var m = new StandardMatcher(log);
            byte s1, s2, s3;
            m.TryRequest(new RequestId(10), null, 0, out s1);
            m.TryRequest(new RequestId(11), null, 0, out s2);
            m.TryRequest(new RequestId(12), null, 0, out s3);
            m.OnFrame(0x81, s3, T.Hex("03"));
            m.OnFrame(0x01, s1, T.Hex("FF"));      // bit 7 clear: a request from the peer (STD-MATCH-5)
            m.OnFrame(0xC1, s1, T.Hex("01"));      // error reply completes (STD-MATCH-6)
            m.OnFrame(0x81, 77, T.Hex("77"));      // unmatched (STD-MATCH-2)
            m.OnFrame(0x81, s1, T.Hex("01"));      // already completed: unmatched
            Assert.AreEqual("reply 12 flag 81 seq 3 03; reply 10 flag C1 seq 1 01; unmatched seq 77; unmatched seq 1", log.Joined);
            Assert.AreEqual(1, m.PendingCount);
            Assert.AreEqual(1, m.PeerRequests);
        }

        [Test]
        public void Timeout_OldestFirst_ThenLateReplyUnmatched_AndSequenceFree()
        {
            var log = new Log();
            var m = new StandardMatcher(log, 100);
            byte a, b, c;
            m.TryRequest(new RequestId(0), null, 0, out a);
            m.TryRequest(new RequestId(1), null, 50, out b);
            m.TryRequest(new RequestId(2), null, 50, out c);
            m.Expire(99);
            Assert.AreEqual(0, log.Events.Count);
            Assert.AreEqual(100, m.NextDeadline);
            m.Expire(150);
            Assert.AreEqual("timeout 0; timeout 1; timeout 2", log.Joined);
            m.OnFrame(0x81, a, default(ReadOnlySpan<byte>));
            Assert.AreEqual("unmatched seq 1", log.Events[3]);
            Assert.AreEqual(long.MaxValue, m.NextDeadline);
        }

        [Test]
        public void DefaultTimeoutIs3000()
        {
            var log = new Log();
            var m = new StandardMatcher(log, 0);
            byte s;
            m.TryRequest(new RequestId(0), null, 0, out s);
            m.Expire(2999);
            Assert.AreEqual(0, log.Events.Count);
            m.Expire(3000);
            Assert.AreEqual("timeout 0", log.Joined);
        }

        [Test]
        public void OneWay_TakesNumberEvenIfPending_NeverCompleted()
        {
            var log = new Log();
            var m = new StandardMatcher(log);
            byte s;
            m.TryRequest(new RequestId(0), null, 0, out s);   // 1
            byte ow;
            for (int i = 0; i < 255; i++) Assert.IsTrue(m.TryOneWay(out ow)); // 2..255, 0
            Assert.IsTrue(m.TryOneWay(out ow));
            Assert.AreEqual(1, ow, "a one-way message may take a pending number");
            Assert.IsTrue(m.TryRequest(new RequestId(1), null, 0, out s));
            Assert.AreEqual(2, s);
            m.OnFrame(0x81, 1, default(ReadOnlySpan<byte>));
            Assert.AreEqual("reply 0 flag 81 seq 1 ", log.Joined, "the reply completes the request, not the one-way message");
        }

        [Test]
        public void FailAll_FailsOldestFirst_AndRefusesLaterSends()
        {
            var log = new Log();
            var m = new StandardMatcher(log);
            byte s;
            m.TryRequest(new RequestId(5), null, 0, out s);
            m.TryRequest(new RequestId(6), null, 0, out s);
            m.FailAll();
            Assert.AreEqual("failed 5; failed 6", log.Joined);
            Assert.IsFalse(m.TryRequest(new RequestId(7), null, 0, out s));
            m.OnFrame(0x81, 1, default(ReadOnlySpan<byte>));
            Assert.AreEqual(2, log.Events.Count);
        }
    }

    [TestFixture]
    public class FifoMatcherTests
    {
        [Test]
        public void Fifo_OldestFirst_ThenUnmatched()
        {
            var log = new Log();
            var m = new FifoMatcher(log);
            byte s;
            for (int i = 0; i < 4; i++) Assert.IsTrue(m.TryRequest(new RequestId(i), null, 0, out s));
            for (int i = 0; i < 5; i++) m.OnFrame(0, 0, new byte[] { (byte)i });
            Assert.AreEqual("reply 0 flag 00 seq 0 00; reply 1 flag 00 seq 0 01; reply 2 flag 00 seq 0 02; reply 3 flag 00 seq 0 03; unmatched seq 0", log.Joined);
        }

        [Test]
        public void Bound256_RefusesTheNextSend()
        {
            var m = new FifoMatcher(new Log());
            byte s;
            for (int i = 0; i < 256; i++) Assert.IsTrue(m.TryRequest(new RequestId(i), null, 0, out s));
            Assert.IsFalse(m.TryRequest(new RequestId(256), null, 0, out s));
            m.OnFrame(0, 0, default(ReadOnlySpan<byte>));
            Assert.IsTrue(m.TryRequest(new RequestId(257), null, 0, out s));
        }

        [Test]
        public void Timeout_FailsTheOthers_AndTheConnection()
        {
            var log = new Log();
            var m = new FifoMatcher(log, 100);
            byte s;
            m.TryRequest(new RequestId(0), null, 0, out s);
            m.TryRequest(new RequestId(1), null, 10, out s);
            m.TryRequest(new RequestId(2), null, 60, out s);
            m.Expire(50);
            Assert.AreEqual(0, log.Events.Count);
            m.Expire(110);
            Assert.AreEqual("timeout 0; timeout 1; failed 2", log.Joined);
            Assert.IsTrue(m.Failed);
            m.OnFrame(0, 0, T.Hex("01"));
            Assert.AreEqual(3, log.Events.Count, "frames after the failure complete nothing");
            Assert.IsFalse(m.TryRequest(new RequestId(3), null, 200, out s));
        }
    }

    [TestFixture]
    public class CompletionSourceTests
    {
        [Test]
        public void AwaitedResult_AndSourceIsReused()
        {
            var pool = new CompletionSourcePool();
            for (int i = 0; i < 100; i++)
            {
                PooledCompletionSource src = pool.Rent();
                ValueTask<Completion> t = src.Task;
                Assert.IsFalse(t.IsCompleted);
                var th = new Thread(() => src.TrySetResult(new Completion { Kind = CompletionKind.Reply, Id = new RequestId(i) }));
                Task<long> waiter = AwaitIt(t);
                th.Start();
                Assert.IsTrue(waiter.Wait(5000));
                Assert.AreEqual(i, waiter.Result);
                Assert.IsTrue(th.Join(5000)); // the completer has released its reference too
            }
            Assert.AreEqual(1, pool.Created, "one source served all sequential requests");
        }

        static async Task<long> AwaitIt(ValueTask<Completion> t)
        {
            Completion c = await t;
            return c.Id.Value;
        }

        [Test]
        public void Stress_CompletionRacesAwait_NoStaleReuse()
        {
            // A completer thread and an awaiting thread race on every source; sources are recycled
            // through one pool. Every awaited result must be the one set for that round.
            foreach (bool inline in new[] { false, true })
            {
                var pool = new CompletionSourcePool(16, inline);
                const int Rounds = 20000;
                var slot = new PooledCompletionSource[1];
                var ready = new SemaphoreSlim(0);
                long errors = 0;
                var completer = new Thread(() =>
                {
                    for (int i = 0; i < Rounds; i++)
                    {
                        ready.Wait();
                        if (!Volatile.Read(ref slot[0]).TrySetResult(new Completion { Kind = CompletionKind.Reply, Id = new RequestId(i) }))
                            Interlocked.Increment(ref errors);
                    }
                });
                completer.Start();
                Task<long> consumer = Task.Run(async () =>
                {
                    long sum = 0;
                    for (int i = 0; i < Rounds; i++)
                    {
                        PooledCompletionSource src = pool.Rent();
                        ValueTask<Completion> t = src.Task;
                        Volatile.Write(ref slot[0], src);
                        ready.Release();
                        if ((i & 1) == 0) Thread.SpinWait(i % 50); // sometimes await after completion
                        Completion c = await t;
                        if (c.Id.Value != i) Interlocked.Increment(ref errors);
                        sum += c.Id.Value;
                    }
                    return sum;
                });
                Assert.IsTrue(consumer.Wait(60000), "consumer finished");
                Assert.IsTrue(completer.Join(10000));
                Assert.AreEqual(0, Interlocked.Read(ref errors), "inline=" + inline);
                Assert.AreEqual((long)Rounds * (Rounds - 1) / 2, consumer.Result);
                Assert.LessOrEqual(pool.Created, 16, "sources are recycled");
            }
        }

        [Test]
        public void CompletedBeforeAwait_AndSecondResultIgnored()
        {
            var pool = new CompletionSourcePool();
            PooledCompletionSource src = pool.Rent();
            ValueTask<Completion> t = src.Task;
            Assert.IsTrue(src.TrySetResult(new Completion { Kind = CompletionKind.Timeout }));
            Assert.IsFalse(src.TrySetResult(new Completion { Kind = CompletionKind.Reply }));
            Assert.IsTrue(t.IsCompleted);
            Assert.AreEqual(CompletionKind.Timeout, AwaitKind(t).Result);
        }

        static async Task<CompletionKind> AwaitKind(ValueTask<Completion> t) { return (await t).Kind; }

        [Test]
        public void StaleValueTask_IsDetected()
        {
            var pool = new CompletionSourcePool();
            PooledCompletionSource src = pool.Rent();
            ValueTask<Completion> first = src.Task;
            src.TrySetResult(new Completion { Kind = CompletionKind.Reply });
            Assert.AreEqual(CompletionKind.Reply, first.Result.Kind);
            Assert.AreSame(src, pool.Rent());
            Assert.Throws<InvalidOperationException>(() => { var x = first.Result; });
        }
    }
}
