using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Globalization;
using System.IO;
using System.Text;
using System.Threading.Tasks;
using Frameproof.Codec;

namespace Frameproof.Bench
{
    /// <summary>
    /// Micro-benchmarks for the codecs (BenchmarkDotNet is not available here): each case is warmed
    /// up, then run in batches until a time budget is spent; it reports the mean ns/op of the best
    /// batch and the bytes allocated per op measured with GC.GetAllocatedBytesForCurrentThread
    /// (the same counter BenchmarkDotNet's "Allocated" column uses).
    /// </summary>
    public static class Program
    {
        delegate void Op(int n); // runs the operation n times

        sealed class Result
        {
            public string Name; public int Size; public double Ns; public double Alloc; public long Ops;
        }

        static double _budgetMs = 300;
        static bool _allocationOnly;   // --allocation-classes: only the matching and Catga's comparisons
        static long _sink;             // results the measured loops feed, so nothing is optimised away
        static readonly List<Result> Results = new List<Result>();

        public static int Main(string[] args)
        {
            if (Micro.Wants(args)) return Micro.Run(args);   // the contract of tools/bench/microbench.md
            string json = null;
            for (int i = 0; i < args.Length; i++)
            {
                if (args[i] == "--quick") _budgetMs = 60;
                else if (args[i] == "--allocation-classes") _allocationOnly = true;
                else if (args[i] == "--json" && i + 1 < args.Length) json = args[++i];
                else if (args[i] == "--budget-ms" && i + 1 < args.Length) _budgetMs = double.Parse(args[++i], CultureInfo.InvariantCulture);
                else { Console.Error.WriteLine("usage: fp-bench [--quick] [--allocation-classes] [--budget-ms MS] [--json FILE] | --case NAME --iterations N --json FILE [--samples S] [--warmup W] | --list"); return 2; }
            }
            Console.WriteLine("fp-bench (csharp, " + RuntimeName() + "), allocation counter: GC.GetAllocatedBytesForCurrentThread");
            Console.WriteLine(string.Format("{0,-40} {1,8} {2,12} {3,16}", "Method", "Payload", "ns/op", "Allocated B/op"));

            if (!_allocationOnly)
            {
                foreach (int size in new[] { 32, 1024, 65536 })
                    foreach (string name in Registry.Names) BenchFrames(Registry.Find(name), size);
                foreach (string name in Registry.Names) BenchEcho(Registry.Find(name));
            }
            BenchMatching();
            BenchAllocationClasses();

            if (json != null)
            {
                var sb = new StringBuilder("{\"implementation\": \"csharp\", \"allocation_counter\": \"GC.GetAllocatedBytesForCurrentThread\", \"results\": [");
                for (int i = 0; i < Results.Count; i++)
                {
                    Result r = Results[i];
                    sb.Append(i > 0 ? ", " : "").AppendFormat(CultureInfo.InvariantCulture,
                        "{{\"name\": \"{0}\", \"payload\": {1}, \"ns_per_op\": {2:F1}, \"allocated_bytes_per_op\": {3:F1}, \"ops\": {4}}}", r.Name, r.Size, r.Ns, r.Alloc, r.Ops);
                }
                File.WriteAllText(json, sb.Append("]}\n").ToString());
            }
            return 0;
        }

        static string RuntimeName()
        {
            Type mono = Type.GetType("Mono.Runtime");
            if (mono != null)
            {
                var m = mono.GetMethod("GetDisplayName", System.Reflection.BindingFlags.NonPublic | System.Reflection.BindingFlags.Static);
                if (m != null) return "Mono " + m.Invoke(null, null);
            }
            return ".NET " + Environment.Version;
        }

        static void Measure(string name, int size, Op op)
        {
            op(16); // warm-up / JIT
            // Calibrate a batch of about 10 ms.
            int n = 1;
            var sw = Stopwatch.StartNew();
            while (true)
            {
                sw.Restart();
                op(n);
                if (sw.Elapsed.TotalMilliseconds > 10 || n >= 1 << 26) break;
                n *= 2;
            }
            double best = double.MaxValue;
            long ops = 0, allocated = 0;
            var total = Stopwatch.StartNew();
            int batches = 0;
            while ((total.Elapsed.TotalMilliseconds < _budgetMs || batches < 3) && batches < 1000)
            {
                long a0 = GC.GetAllocatedBytesForCurrentThread();
                sw.Restart();
                op(n);
                double ns = sw.Elapsed.TotalMilliseconds * 1e6 / n;
                allocated += GC.GetAllocatedBytesForCurrentThread() - a0;
                ops += n;
                if (ns < best) best = ns;
                batches++;
            }
            var r = new Result { Name = name, Size = size, Ns = best, Alloc = (double)allocated / ops, Ops = ops };
            Results.Add(r);
            Console.WriteLine(string.Format(CultureInfo.InvariantCulture, "{0,-40} {1,8} {2,12:F1} {3,16:F1}", name, size, r.Ns, r.Alloc));
        }

        /// <summary>The encoder and the decoder of one protocol at one payload size, with the codec of
        /// the micro-benchmark catalog (<see cref="ProtocolModule.BenchSpec"/>): encode = the payload
        /// check and the server's reply encoder; decode = the server's streaming decoder, fed the
        /// client's requests whole or each split in two reads.</summary>
        static void BenchFrames(ProtocolModule m, int size)
        {
            FrameCodec codec = m.Create(m.BenchSpec(size));
            string label = m.Name;
            byte[] payload = new byte[size];
            Payloads.Fill(1, payload);
            byte[] reply = new byte[codec.BenchReplyLength(size)];
            Measure(label + " encode", size, n =>
            {
                ProtocolError err;
                for (int i = 0; i < n; i++)
                {
                    if (!codec.CheckPayload(size, out err)) throw new Exception(label + " encode bench broken: " + err);
                    codec.WriteBenchReply(i, payload, reply, 0);
                }
            });
            byte[] request = codec.BenchRequest(1, payload);
            BenchDecoder dec = codec.NewBenchDecoder();
            Measure(label + " decode (whole frames)", size, n =>
            {
                for (int i = 0; i < n; i++) dec.Feed(request);
            });
            int half = request.Length / 2;
            Measure(label + " decode (split in 2)", size, n =>
            {
                for (int i = 0; i < n; i++)
                {
                    dec.Feed(new ReadOnlySpan<byte>(request, 0, half));
                    dec.Feed(new ReadOnlySpan<byte>(request, half, request.Length - half));
                }
            });
            if (!dec.Feed(request) || dec.Frames == 0) throw new Exception(label + " decode bench broken");
            dec.Dispose();
        }

        /// <summary>The server's per-frame work: its session (the default endpoint, without an opening
        /// handshake) decodes a read full of request frames and encodes every reply. The frames are
        /// 32 bytes where the protocol's header leaves room for a payload (as the upstream echo
        /// benchmarks send them: 28 B + 4, 30 B + 2), else they carry an empty payload.</summary>
        static void BenchEcho(ProtocolModule m)
        {
            FrameCodec codec = m.Create(m.BenchSpec(32));
            int size = Math.Max(0, 32 - codec.BenchRequest(0, ReadOnlySpan<byte>.Empty).Length);
            var payload = new byte[size];
            int frameLen = codec.BenchRequest(0, payload).Length;
            int frames = 65536 / frameLen;
            var read = new byte[frames * frameLen];
            for (int i = 0; i < frames; i++)
            {
                Payloads.Fill(i, payload);
                Buffer.BlockCopy(codec.BenchRequest(i, payload), 0, read, i * frameLen, frameLen);
            }
            ServerSession session = codec.NewSession("", false);
            Measure(m.Name + " echo per frame (64K read)", size, n =>
            {
                // n frames: whole reads, each decoded and answered.
                for (int done = 0; done < n; done += frames)
                {
                    session.ClearOutput();
                    session.Receive(read);
                }
            });
            // Measure() divides by n, and each loop pass handles `frames` frames, so this is per frame.
            if (session.Closed || session.OutputLength != frames * codec.BenchReplyLength(size))
                throw new Exception(m.Name + " echo bench broken: " + (session.Closed ? session.Error.ToString() : session.OutputLength + " bytes written"));
            session.Dispose();
        }

        sealed class CompletingObserver : IMatchObserver
        {
            public void OnReply(RequestId id, object state, byte flag, byte sequence, ReadOnlySpan<byte> payload)
            {
                var s = state as PooledCompletionSource;
                if (s != null) s.TrySetResult(new Completion { Kind = CompletionKind.Reply, Id = id });
            }
            public void OnTimeout(RequestId id, object state) { }
            public void OnFailed(RequestId id, object state) { }
            public void OnUnmatched(byte flag, byte sequence, ReadOnlySpan<byte> payload) { }
        }

        sealed class FlagCatcher : IFrameHandler
        {
            public byte Flag;
            public void OnFrame(byte flag, byte sequence, ReadOnlySpan<byte> payload) { Flag = flag; }
        }

        /// <summary>The flag of the server's reply (<see cref="FrameCodec.WriteBenchReply"/>) as the
        /// protocol's decoder delivers it to a matcher.</summary>
        static byte ReplyFlag(FrameCodec codec)
        {
            var bytes = new byte[codec.BenchReplyLength(0)];
            codec.WriteBenchReply(0, ReadOnlySpan<byte>.Empty, bytes, 0);
            var h = new FlagCatcher();
            using (FrameDecoder d = codec.NewDecoder()) d.Feed(bytes, h);
            return h.Flag;
        }

        /// <summary>The client-side matchers of the protocols whose frames are (flag, sequence,
        /// payload) (<see cref="FrameCodec.NewMatcher"/>; those with typed frames match inside their
        /// codec): a request and its reply; then, with the first of them, the pooled completion the
        /// load client awaits, against a TaskCompletionSource per request.</summary>
        static void BenchMatching()
        {
            var obs = new CompletingObserver();
            byte[] reply = new byte[4];
            IRequestMatcher first = null;
            byte firstFlag = 0;
            foreach (string name in Registry.Names)
            {
                FrameCodec codec = Registry.Find(name).Create(CodecSpec.Named(name));
                if (codec.Typed != null) continue;
                IRequestMatcher matcher = codec.NewMatcher(obs, 0);
                byte flag = ReplyFlag(codec);
                Measure(name + " match request+reply", 0, n =>
                {
                    byte seq;
                    for (int i = 0; i < n; i++)
                    {
                        matcher.TryRequest(new RequestId(i), null, 0, out seq);
                        matcher.OnFrame(flag, seq, reply);
                    }
                });
                if (first == null) { first = matcher; firstFlag = flag; }
            }
            if (first == null) return;
            var pool = new CompletionSourcePool();
            Measure("pooled ValueTask completion", 0, n =>
            {
                byte seq;
                for (int i = 0; i < n; i++)
                {
                    PooledCompletionSource src = pool.Rent();
                    ValueTask<Completion> t = src.Task;
                    first.TryRequest(new RequestId(i), src, 0, out seq);
                    first.OnFrame(firstFlag, seq, reply);
                    if (t.Result.Kind != CompletionKind.Reply) throw new Exception();
                }
            });
            Measure("TaskCompletionSource (baseline)", 0, n =>
            {
                for (int i = 0; i < n; i++)
                {
                    var tcs = new TaskCompletionSource<Completion>();
                    tcs.SetResult(new Completion { Kind = CompletionKind.Reply, Id = new RequestId(i) });
                    if (tcs.Task.Result.Kind != CompletionKind.Reply) throw new Exception();
                }
            });
        }

        /// <summary>The allocation classes of Catga's benchmark report (github Cricle/Catga, 2025-10-05: struct vs
        /// string message ids, ValueTask vs Task.FromResult, ArrayPool vs new arrays) on this
        /// implementation's own hot paths: the correlation id of a pending request (registered under
        /// its id, found and removed when the reply comes), the completion handed to the caller, the
        /// buffer a split frame is copied into. One op = one request's worth.</summary>
        static void BenchAllocationClasses()
        {
            var byStruct = new Dictionary<RequestId, int>();
            Measure("catga id: struct RequestId (register+complete)", 0, n =>
            {
                for (int i = 0; i < n; i++)
                {
                    var id = new RequestId(i);
                    byStruct.Add(id, i);
                    int v;
                    if (!byStruct.TryGetValue(new RequestId(i), out v)) throw new Exception();
                    byStruct.Remove(id);
                    _sink += v;
                }
            });
            var byString = new Dictionary<string, int>(StringComparer.Ordinal);
            Measure("catga id: string id (register+complete)", 0, n =>
            {
                for (int i = 0; i < n; i++)
                {
                    string id = ((long)i).ToString("x16", CultureInfo.InvariantCulture);   // a 16-character id per request
                    byString.Add(id, i);
                    int v;
                    if (!byString.TryGetValue(id, out v)) throw new Exception();
                    byString.Remove(id);
                    _sink += v;
                }
            });
            var done = new Completion { Kind = CompletionKind.Reply, PayloadLength = 32 };
            Measure("catga completion: ValueTask<Completion> (sync)", 0, n =>
            {
                for (int i = 0; i < n; i++)
                {
                    ValueTask<Completion> t = Complete(done);
                    _sink += t.Result.PayloadLength;
                }
            });
            Measure("catga completion: Task.FromResult (sync)", 0, n =>
            {
                for (int i = 0; i < n; i++)
                {
                    Task<Completion> t = CompleteTask(done);
                    _sink += t.Result.PayloadLength;
                }
            });
            var frame = new byte[1024];
            for (int i = 0; i < frame.Length; i++) frame[i] = (byte)i;
            Measure("catga buffer: ArrayPool rent+copy+return", 1024, n =>
            {
                for (int i = 0; i < n; i++)
                {
                    byte[] b = System.Buffers.ArrayPool<byte>.Shared.Rent(frame.Length);
                    Buffer.BlockCopy(frame, 0, b, 0, frame.Length);
                    _sink += b[frame.Length - 1];
                    System.Buffers.ArrayPool<byte>.Shared.Return(b);
                }
            });
            Measure("catga buffer: new byte[] + copy", 1024, n =>
            {
                for (int i = 0; i < n; i++)
                {
                    var b = new byte[frame.Length];
                    Buffer.BlockCopy(frame, 0, b, 0, frame.Length);
                    _sink += b[frame.Length - 1];
                }
            });
        }

        [System.Runtime.CompilerServices.MethodImpl(System.Runtime.CompilerServices.MethodImplOptions.NoInlining)]
        static ValueTask<Completion> Complete(Completion c) { return new ValueTask<Completion>(c); }

        [System.Runtime.CompilerServices.MethodImpl(System.Runtime.CompilerServices.MethodImplOptions.NoInlining)]
        static Task<Completion> CompleteTask(Completion c) { return Task.FromResult(c); }
    }
}
