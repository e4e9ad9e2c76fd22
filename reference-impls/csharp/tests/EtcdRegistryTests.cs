using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.IO;
using System.Net;
using System.Net.Sockets;
using System.Text;
using System.Threading;
using Frameproof.Codec;
using Frameproof.Discovery;
using Frameproof.Testee;
using NUnit.Framework;

namespace Frameproof.Tests
{
    /// <summary>etcd (Debian's etcd-server) on 127.0.0.1 with a temporary data dir, as the Python
    /// suite's LocalEtcd: <see cref="Stop"/> and <see cref="Start"/> again keep the data (a restart).</summary>
    public sealed class LocalEtcd : IDisposable
    {
        public readonly string Dir;
        public readonly int ClientPort, PeerPort;
        Process _proc;

        public string Endpoint { get { return "127.0.0.1:" + ClientPort; } }

        public static string Binary()
        {
            foreach (string d in (Environment.GetEnvironmentVariable("PATH") ?? "").Split(':'))
            {
                if (d.Length == 0) continue;
                string p = Path.Combine(d, "etcd");
                if (File.Exists(p)) return p;
            }
            return null;
        }

        public static int FreePort()
        {
            var l = new TcpListener(IPAddress.Loopback, 0);
            l.Start();
            int port = ((IPEndPoint)l.LocalEndpoint).Port;
            l.Stop();
            return port;
        }

        /// <summary>A started etcd; the test is ignored (listed as SKIPPED by test.sh, which the repo
        /// counts as a failure unless allow-listed) only when etcd is not installed.</summary>
        public static LocalEtcd StartNew()
        {
            if (Binary() == null) Assert.Ignore("etcd is not installed (Debian: apt-get install etcd-server)");
            var e = new LocalEtcd();
            try { e.Start(); }
            catch { e.Dispose(); throw; }
            return e;
        }

        LocalEtcd()
        {
            Dir = Path.Combine(Path.GetTempPath(), "fp-etcd-cs-" + Guid.NewGuid().ToString("N"));
            Directory.CreateDirectory(Dir);
            ClientPort = FreePort();
            PeerPort = FreePort();
        }

        public void Start()
        {
            string c = "http://127.0.0.1:" + ClientPort, p = "http://127.0.0.1:" + PeerPort;
            var psi = new ProcessStartInfo(Binary(),
                "--name fp --data-dir " + Path.Combine(Dir, "data") + " --listen-client-urls " + c + " --advertise-client-urls " + c +
                " --listen-peer-urls " + p + " --initial-advertise-peer-urls " + p + " --initial-cluster fp=" + p)
            {
                UseShellExecute = false, RedirectStandardOutput = true, RedirectStandardError = true,
            };
            _proc = Process.Start(psi);
            _proc.OutputDataReceived += (s, a) => { };
            _proc.ErrorDataReceived += (s, a) => { };
            _proc.BeginOutputReadLine();
            _proc.BeginErrorReadLine();
            var gw = new EtcdGateway(Endpoint);
            var sw = Stopwatch.StartNew();
            while (sw.Elapsed < TimeSpan.FromSeconds(20))
            {
                if (_proc.HasExited) Assert.Fail("etcd exited with status " + _proc.ExitCode);
                try
                {
                    gw.Post("/v3/kv/range", "{\"key\":\"Lw==\"}", EtcdGateway.Deadline(TimeSpan.FromSeconds(1)));
                    return;
                }
                catch (EtcdUnreachableException) { Thread.Sleep(100); }
            }
            Stop();
            Assert.Fail("etcd did not answer within 20 s");
        }

        public void Stop()
        {
            Process p = _proc;
            _proc = null;
            if (p == null) return;
            try { if (!p.HasExited) p.Kill(); } catch (Exception) { }
            p.WaitForExit(10000);
            p.Dispose();
        }

        public void Dispose()
        {
            Stop();
            try { Directory.Delete(Dir, true); } catch (Exception) { }
        }
    }

    /// <summary>The etcd-backed registry (spec/discovery.md §8, DISC-ETCD-1..7) on a private etcd,
    /// and the testee's scripts on it (feature discovery-etcd).</summary>
    [TestFixture]
    public class EtcdRegistryTests
    {
        const string Svc = "svc.a";

        static ServiceEndpoint Ep(string id, uint port = 1, uint weight = 1, string svc = Svc) { return new ServiceEndpoint(svc, id, "10.0.0.1", port, weight); }

        static string[] Ids(IServiceRegistry r, string svc = Svc)
        {
            EndpointList l;
            Assert.AreEqual(DiscoveryCode.Ok, r.Discover(svc, out l));
            var ids = new string[l.Count];
            for (int i = 0; i < l.Count; i++) ids[i] = l[i].InstanceId;
            return ids;
        }

        static bool Within(double seconds, Func<bool> pred)
        {
            var sw = Stopwatch.StartNew();
            while (sw.Elapsed.TotalSeconds < seconds)
            {
                if (pred()) return true;
                Thread.Sleep(50);
            }
            return pred();
        }

        /// <summary>(key, value, lease) of every key under a prefix, in create order.</summary>
        static List<string[]> Kvs(LocalEtcd etcd, string prefix)
        {
            JsonValue d = new EtcdGateway(etcd.Endpoint).RangePrefix(Encoding.UTF8.GetBytes("/" + prefix + "/"), EtcdGateway.Deadline(TimeSpan.FromSeconds(5)));
            var r = new List<string[]>();
            JsonValue kvs = EtcdGateway.Member(d, "kvs");
            if (kvs == null) return r;
            foreach (JsonValue kv in kvs.Items)
                r.Add(new[] { Encoding.UTF8.GetString(EtcdGateway.UnB64(EtcdGateway.Member(kv, "key"))),
                              Encoding.UTF8.GetString(EtcdGateway.UnB64(EtcdGateway.Member(kv, "value"))),
                              EtcdGateway.Int64(kv, "lease").ToString() });
            return r;
        }

        sealed class Recorder
        {
            public readonly List<string> Events = new List<string>();
            public readonly List<int> Threads = new List<int>();
            public void On(ServiceEventType t, ServiceEndpoint e)
            {
                lock (Events)
                {
                    Events.Add(t.ToString().ToUpperInvariant() + " " + e.InstanceId + ":" + e.Port);
                    Threads.Add(Thread.CurrentThread.ManagedThreadId);
                }
            }
            public string[] Snapshot() { lock (Events) return Events.ToArray(); }
        }

        [Test]
        public void Operations_KeysValuesLeaseAndOrder()
        {
            using (LocalEtcd etcd = LocalEtcd.StartNew())
            using (var r = new EtcdRegistry(etcd.Endpoint, "fp-test/ops", 3, TimeSpan.FromSeconds(2)))
            {
                Assert.AreEqual(0, r.Lease, "no lease before the first register");
                Assert.AreEqual(DiscoveryCode.Ok, r.Register(Ep("i1", 7001, 5)));
                Assert.AreEqual(DiscoveryCode.Ok, r.Register(Ep("i0", 7002)));
                Assert.AreEqual(DiscoveryCode.Ok, r.Register(Ep("i2", 7003, 0)));
                Assert.AreEqual(DiscoveryCode.Ok, r.Register(Ep("x", 1, 1, "svc.b")));
                CollectionAssert.AreEqual(new[] { "i1", "i0", "i2" }, Ids(r), "create-revision order (DISC-ETCD-4)");
                // a replacement keeps its place (its create revision) and its value changes
                Assert.AreEqual(DiscoveryCode.Ok, r.Register(Ep("i1", 7009, 2)));
                EndpointList l;
                Assert.AreEqual(DiscoveryCode.Ok, r.Discover(Svc, out l));
                Assert.AreEqual("i1", l[0].InstanceId);
                Assert.AreEqual(7009u, l[0].Port);
                Assert.AreEqual(2u, l[0].Weight);
                Assert.AreEqual(DiscoveryCode.Ok, r.Deregister(Svc, "i0"));
                Assert.AreEqual(DiscoveryCode.NotFound, r.Deregister(Svc, "i0"));
                Assert.AreEqual(DiscoveryCode.NotFound, r.Deregister("svc.none", "i0"));
                CollectionAssert.AreEqual(new[] { "i1", "i2" }, Ids(r));
                CollectionAssert.AreEqual(new[] { "x" }, Ids(r, "svc.b"));
                CollectionAssert.AreEqual(new string[0], Ids(r, "svc.none"));
                Assert.AreEqual(DiscoveryCode.InvalidArgument, r.Register(Ep("bad/id")));
                Assert.AreEqual(DiscoveryCode.InvalidArgument, r.Register(new ServiceEndpoint(Svc, "i", "", 1)));
                Assert.AreEqual(DiscoveryCode.InvalidArgument, r.Deregister("", "i"));
                Assert.AreEqual(DiscoveryCode.InvalidArgument, r.Discover("a/b", out l));

                // DISC-ETCD-1/2/5: the keys and values of §8, each under this registry's lease
                List<string[]> kvs = Kvs(etcd, "fp-test/ops");
                Assert.AreEqual(3, kvs.Count);
                string[] want = { "/fp-test/ops/svc.a/i1", "/fp-test/ops/svc.a/i2", "/fp-test/ops/svc.b/x" };
                for (int i = 0; i < 3; i++) Assert.AreEqual(want[i], kvs[i][0]);
                Assert.AreEqual("{\"service\":\"svc.a\",\"instance_id\":\"i1\",\"host\":\"10.0.0.1\",\"port\":7009,\"weight\":2}", kvs[0][1]);
                Assert.AreNotEqual(0, r.Lease);
                foreach (string[] kv in kvs) Assert.AreEqual(r.Lease.ToString(), kv[2], "leased: " + kv[0]);
                JsonValue ttl = new EtcdGateway(etcd.Endpoint).Post("/v3/lease/timetolive", "{\"ID\":\"" + r.Lease + "\"}", EtcdGateway.Deadline(TimeSpan.FromSeconds(5)));
                Assert.AreEqual(3, EtcdGateway.Int64(ttl, "grantedTTL"));
            }
        }

        [Test]
        public void Watch_AddedUpdatedRemoved_InOrder_OnTheDeliveryThread_NoReplay()
        {
            using (LocalEtcd etcd = LocalEtcd.StartNew())
            using (var r = new EtcdRegistry(etcd.Endpoint, "fp-test/watch", 10, TimeSpan.FromSeconds(2)))
            using (var other = new EtcdRegistry(etcd.Endpoint, "fp-test/watch", 10, TimeSpan.FromSeconds(2)))
            {
                Assert.AreEqual(DiscoveryCode.Ok, r.Register(Ep("i0", 1)));
                var rec = new Recorder();
                var recB = new Recorder();
                long h, hb, dummy;
                Assert.AreEqual(DiscoveryCode.Ok, r.Watch(Svc, rec.On, out h));
                Assert.AreEqual(DiscoveryCode.Ok, r.Watch("svc.b", recB.On, out hb));
                Assert.AreNotEqual(h, hb);
                Assert.AreEqual(DiscoveryCode.InvalidArgument, r.Watch("", rec.On, out dummy));
                Assert.AreEqual(DiscoveryCode.Ok, r.Register(Ep("i1", 1)));
                Assert.AreEqual(DiscoveryCode.Ok, r.Register(Ep("i1", 2)));
                Assert.AreEqual(DiscoveryCode.Ok, r.Register(Ep("y", 1, 1, "svc.b")));
                Assert.AreEqual(DiscoveryCode.Ok, r.Deregister(Svc, "i0"));
                Assert.AreEqual(DiscoveryCode.Ok, other.Register(Ep("i2", 3)));   // another process's write
                Assert.IsTrue(r.Deliver(), "this registry's writes delivered");
                Assert.IsTrue(Within(5, () => rec.Snapshot().Length >= 4), string.Join(", ", rec.Snapshot()));
                Thread.Sleep(200);
                CollectionAssert.AreEqual(new[] { "ADDED i1:1", "UPDATED i1:2", "REMOVED i0:1", "ADDED i2:3" }, rec.Snapshot(),
                                          "no replay of i0, etcd's order (DISC-ETCD-6)");
                CollectionAssert.AreEqual(new[] { "ADDED y:1" }, recB.Snapshot());
                foreach (int t in rec.Threads) Assert.AreNotEqual(Thread.CurrentThread.ManagedThreadId, t, "callbacks on the registry's thread");
                Assert.AreEqual(rec.Threads[0], recB.Threads[0], "one delivery thread");

                Assert.AreEqual(DiscoveryCode.Ok, r.Unwatch(h));
                Assert.AreEqual(DiscoveryCode.NotFound, r.Unwatch(h));
                Assert.AreEqual(DiscoveryCode.Ok, r.Register(Ep("i3")));
                Assert.IsTrue(r.Deliver());
                Thread.Sleep(300);
                Assert.AreEqual(4, rec.Snapshot().Length, "no event after unwatch (DISC-WATCH-5)");
            }
        }

        [Test]
        public void Callback_MayCallTheRegistry_AndUnwatchItself()
        {
            using (LocalEtcd etcd = LocalEtcd.StartNew())
            using (var r = new EtcdRegistry(etcd.Endpoint, "fp-test/nested", 10, TimeSpan.FromSeconds(2)))
            {
                var got = new List<string>();
                long h = 0;
                Assert.AreEqual(DiscoveryCode.Ok, r.Watch(Svc, (t, e) =>
                {
                    lock (got) got.Add(t + " " + e.InstanceId);
                    if (e.InstanceId == "i0") lock (got) got.Add("nested " + r.Register(Ep("i1")));
                    if (e.InstanceId == "i1") lock (got) got.Add("unwatch " + r.Unwatch(h));
                }, out h));
                Assert.AreEqual(DiscoveryCode.Ok, r.Register(Ep("i0")));
                Assert.IsTrue(Within(5, () => { lock (got) return got.Count >= 4; }));
                Assert.AreEqual(DiscoveryCode.Ok, r.Register(Ep("i2")));
                Thread.Sleep(300);
                lock (got) CollectionAssert.AreEqual(new[] { "Added i0", "nested Ok", "Added i1", "unwatch Ok" }, got);
            }
        }

        [Test]
        public void Selectors_ReadThroughDiscover()
        {
            using (LocalEtcd etcd = LocalEtcd.StartNew())
            using (var r = new EtcdRegistry(etcd.Endpoint, "fp-test/sel", 10, TimeSpan.FromSeconds(2)))
            {
                Selector s;
                Assert.AreEqual(DiscoveryCode.Ok, Selector.Create(r, Svc, "round-robin", 1UL, out s));
                ServiceEndpoint e;
                Assert.AreEqual(DiscoveryCode.NotFound, s.Select(out e));
                r.Register(Ep("a")); r.Register(Ep("b")); r.Register(Ep("z", 1, 0));
                var picks = new List<string>();
                for (int i = 0; i < 4; i++) { Assert.AreEqual(DiscoveryCode.Ok, s.Select(out e)); picks.Add(e.InstanceId); }
                CollectionAssert.AreEqual(new[] { "a", "b", "a", "b" }, picks);
            }
            using (var down = new EtcdRegistry("127.0.0.1:" + LocalEtcd.FreePort(), "fp-test/sel", 2, TimeSpan.FromMilliseconds(300)))
            {
                Selector s;
                ServiceEndpoint e;
                Assert.AreEqual(DiscoveryCode.Ok, Selector.Create(down, Svc, "weighted-random", 1UL, out s));
                Assert.AreEqual(DiscoveryCode.ConnectionError, s.Select(out e));
            }
        }

        [Test]
        public void Close_RevokesTheLease_Abandon_LeavesTheKeysToExpire()
        {
            using (LocalEtcd etcd = LocalEtcd.StartNew())
            {
                var r = new EtcdRegistry(etcd.Endpoint, "fp-test/close", 2, TimeSpan.FromSeconds(2));
                Assert.AreEqual(DiscoveryCode.Ok, r.Register(Ep("a")));
                r.Close(false);
                Assert.AreEqual(0, Kvs(etcd, "fp-test/close").Count, "revoked: the keys went at once");

                var c = new EtcdRegistry(etcd.Endpoint, "fp-test/close", 2, TimeSpan.FromSeconds(2));
                Assert.AreEqual(DiscoveryCode.Ok, c.Register(Ep("b")));
                Thread.Sleep(2500);   // longer than the TTL: the keep-alives hold the key
                Assert.AreEqual(1, Kvs(etcd, "fp-test/close").Count, "kept alive past its TTL (DISC-ETCD-5)");
                c.Close(true);
                var sw = Stopwatch.StartNew();
                Assert.AreEqual(1, Kvs(etcd, "fp-test/close").Count, "abandoned: the key stays until the lease expires");
                Assert.IsTrue(Within(2 * 4.0 / 3 + 1.5, () => Kvs(etcd, "fp-test/close").Count == 0), "gone within TTL + TTL/3");
                Assert.Greater(sw.Elapsed.TotalSeconds, 0.3);
            }
        }

        [Test]
        public void Unreachable_ConnectionError_WithinTheRequestTimeout()
        {
            using (var r = new EtcdRegistry("127.0.0.1:" + LocalEtcd.FreePort(), "fp-test/down", 2, TimeSpan.FromMilliseconds(1000)))
            {
                EndpointList l;
                long h;
                Func<Func<DiscoveryCode>, string> timed = op =>
                {
                    var sw = Stopwatch.StartNew();
                    DiscoveryCode c = op();
                    Assert.Less(sw.Elapsed.TotalSeconds, 1.8, "bounded by the request timeout (DISC-ETCD-7)");
                    return c.ToString();
                };
                Assert.AreEqual("ConnectionError", timed(() => r.Register(Ep("a"))));
                Assert.AreEqual("ConnectionError", timed(() => r.Discover(Svc, out l)));
                Assert.AreEqual("ConnectionError", timed(() => r.Deregister(Svc, "a")));
                Assert.AreEqual("ConnectionError", timed(() => r.Watch(Svc, (t, e) => { }, out h)));
            }
            // a port that accepts and never answers (not etcd): the same bound
            var l2 = new TcpListener(IPAddress.Loopback, 0);
            l2.Start();
            try
            {
                using (var r = new EtcdRegistry("127.0.0.1:" + ((IPEndPoint)l2.LocalEndpoint).Port, "fp-test/down", 2, TimeSpan.FromMilliseconds(500)))
                {
                    var sw = Stopwatch.StartNew();
                    Assert.AreEqual(DiscoveryCode.ConnectionError, r.Register(Ep("a")));
                    Assert.Less(sw.Elapsed.TotalSeconds, 1.3);
                }
            }
            finally { l2.Stop(); }
            Assert.Throws<ArgumentException>(() => new EtcdRegistry("127.0.0.1:1", "/p"));
            Assert.Throws<ArgumentException>(() => new EtcdRegistry("nohost", "p"));
        }

        [Test]
        public void ALostLease_IsReplaced_AndTheInstancesWrittenAgain()
        {
            using (LocalEtcd etcd = LocalEtcd.StartNew())
            using (var r = new EtcdRegistry(etcd.Endpoint, "fp-test/lease", 2, TimeSpan.FromSeconds(2)))
            {
                Assert.AreEqual(DiscoveryCode.Ok, r.Register(Ep("i0")));
                long first = r.Lease;
                new EtcdGateway(etcd.Endpoint).Post("/v3/lease/revoke", "{\"ID\":\"" + first + "\"}", EtcdGateway.Deadline(TimeSpan.FromSeconds(5)));
                Assert.AreEqual(0, Kvs(etcd, "fp-test/lease").Count, "etcd forgot the lease: the key went");
                Assert.IsTrue(Within(5, () => Kvs(etcd, "fp-test/lease").Count == 1), "written again by the keep-alive");
                Assert.AreNotEqual(first, r.Lease);
                Assert.AreEqual(r.Lease.ToString(), Kvs(etcd, "fp-test/lease")[0][2]);
                // and a register right after another loss renews the lease itself
                new EtcdGateway(etcd.Endpoint).Post("/v3/lease/revoke", "{\"ID\":\"" + r.Lease + "\"}", EtcdGateway.Deadline(TimeSpan.FromSeconds(5)));
                Assert.AreEqual(DiscoveryCode.Ok, r.Register(Ep("i1")));
                CollectionAssert.AreEquivalent(new[] { "i0", "i1" }, Ids(r));
            }
        }

        [Test]
        public void ACompactedWatch_GetsTheDifference()
        {
            using (LocalEtcd etcd = LocalEtcd.StartNew())
            using (var r = new EtcdRegistry(etcd.Endpoint, "fp-test/compact", 10, TimeSpan.FromSeconds(2)))
            {
                var gw = new EtcdGateway(etcd.Endpoint);
                Assert.AreEqual(DiscoveryCode.Ok, r.Register(Ep("i0")));
                Assert.AreEqual(DiscoveryCode.Ok, r.Register(Ep("i1")));
                long start = EtcdGateway.Revision(gw.RangePrefix(Encoding.UTF8.GetBytes("/"), EtcdGateway.Deadline(TimeSpan.FromSeconds(5)))) + 1;
                var seen = new List<ServiceEndpoint> { Ep("i0"), Ep("i1") };   // what the watcher last saw
                Assert.AreEqual(DiscoveryCode.Ok, r.Deregister(Svc, "i0"));
                Assert.AreEqual(DiscoveryCode.Ok, r.Register(Ep("i1", 2)));
                Assert.AreEqual(DiscoveryCode.Ok, r.Register(Ep("i2")));
                long now = EtcdGateway.Revision(gw.RangePrefix(Encoding.UTF8.GetBytes("/"), EtcdGateway.Deadline(TimeSpan.FromSeconds(5))));
                gw.Post("/v3/kv/compaction", "{\"revision\":\"" + now + "\",\"physical\":true}", EtcdGateway.Deadline(TimeSpan.FromSeconds(5)));
                var rec = new Recorder();
                long h;
                Assert.AreEqual(DiscoveryCode.Ok, r.WatchFrom(Svc, rec.On, start, seen, out h));
                Assert.IsTrue(Within(5, () => rec.Snapshot().Length >= 3), string.Join(", ", rec.Snapshot()));
                CollectionAssert.AreEqual(new[] { "REMOVED i0:1", "UPDATED i1:2", "ADDED i2:1" }, rec.Snapshot());
                Assert.AreEqual(DiscoveryCode.Ok, r.Register(Ep("i3")));   // and it goes on from the current revision
                Assert.IsTrue(Within(5, () => rec.Snapshot().Length >= 4));
                Thread.Sleep(200);
                CollectionAssert.AreEqual(new[] { "REMOVED i0:1", "UPDATED i1:2", "ADDED i2:1", "ADDED i3:1" }, rec.Snapshot());
            }
        }

        [Test]
        public void EtcdRestart_OperationsFail_ThenRecover_AndTheWatchResumes()
        {
            using (LocalEtcd etcd = LocalEtcd.StartNew())
            using (var r = new EtcdRegistry(etcd.Endpoint, "fp-test/restart", 2, TimeSpan.FromSeconds(1)))
            {
                var rec = new Recorder();
                long h;
                Assert.AreEqual(DiscoveryCode.Ok, r.Register(Ep("i0")));
                Assert.AreEqual(DiscoveryCode.Ok, r.Watch(Svc, rec.On, out h));
                Assert.AreEqual(DiscoveryCode.Ok, r.Register(Ep("i1")));
                Assert.IsTrue(Within(5, () => rec.Snapshot().Length == 1));
                etcd.Stop();
                var sw = Stopwatch.StartNew();
                EndpointList l;
                Assert.AreEqual(DiscoveryCode.ConnectionError, r.Register(Ep("i2")));
                Assert.AreEqual(DiscoveryCode.ConnectionError, r.Discover(Svc, out l));
                Assert.Less(sw.Elapsed.TotalSeconds, 3.5);
                Thread.Sleep(2500);   // longer than the lease TTL
                etcd.Start();
                Assert.IsTrue(Within(10, () => r.Register(Ep("i2")) == DiscoveryCode.Ok));
                Assert.IsTrue(Within(10, () => { var ids = new List<string>(Ids(r)); return ids.Contains("i0") && ids.Contains("i1") && ids.Contains("i2"); }),
                              string.Join(",", Ids(r)));
                Assert.IsTrue(Within(10, () => Array.IndexOf(rec.Snapshot(), "ADDED i2:1") >= 0), string.Join(", ", rec.Snapshot()));
                string[] got = rec.Snapshot();
                for (int i = 1; i < got.Length; i++) Assert.AreNotEqual(got[i - 1], got[i], "no event twice: " + string.Join(", ", got));
            }
        }

        // ---------------------------------------------------------------- the testee (feature discovery-etcd)

        static DiscoveryOpMsg Reg(string id, uint port = 1, string svc = Svc)
        {
            return new DiscoveryOpMsg { Kind = DiscoveryOpKind.Register, Endpoint = new DiscoveryEndpointMsg { Service = svc, InstanceId = id, Host = "h", Port = port, Weight = 1 } };
        }

        static TesteeResponseMsg Script(LocalEtcd etcd, string endpoint, string prefix, bool abandon, params DiscoveryOpMsg[] ops)
        {
            var d = new DiscoveryRequestMsg { HasEtcd = true, EtcdEndpoint = endpoint, EtcdPrefix = prefix, EtcdLeaseTtlS = 2, EtcdAbandon = abandon, EtcdRequestTimeoutMs = 1000 };
            d.Ops.AddRange(ops);
            return TesteeService.Handle(TesteeRequestMsg.Parse(d.ToTesteeBytes()));
        }

        [Test]
        public void Testee_RunsEtcdScripts_AndAdvertisesTheFeature()
        {
            TesteeResponseMsg hello = TesteeService.Handle(TesteeRequestMsg.Parse(new TesteeRequestMsg { Kind = RequestKind.Hello, MaxHarnessVersion = 2 }.ToBytes()));
            CollectionAssert.Contains(hello.Features, "discovery-etcd");
            using (LocalEtcd etcd = LocalEtcd.StartNew())
            {
                TesteeResponseMsg r = Script(etcd, etcd.Endpoint, "fp-test/testee", false,
                    new DiscoveryOpMsg { Kind = DiscoveryOpKind.Watch, Service = Svc },
                    Reg("i1"), Reg("i0"), Reg("i1", 2),
                    new DiscoveryOpMsg { Kind = DiscoveryOpKind.Deregister, Endpoint = new DiscoveryEndpointMsg { Service = Svc, InstanceId = "i0" } },
                    new DiscoveryOpMsg { Kind = DiscoveryOpKind.Discover, Service = Svc },
                    new DiscoveryOpMsg { Kind = DiscoveryOpKind.Select, SelectorId = 0, Service = Svc, Selector = "round-robin", Count = 2 },
                    new DiscoveryOpMsg { Kind = DiscoveryOpKind.Concurrent, Service = "svc.c", Threads = 1, Rounds = 1 });
                Assert.AreEqual(ResponseKind.Discovery, r.Kind, r.Text);
                var codes = new List<uint>();
                foreach (DiscoveryResultMsg x in r.Discovery.Results) codes.Add(x.Code);
                CollectionAssert.AreEqual(new uint[] { 0, 0, 0, 0, 0, 0, 0, (uint)DiscoveryCode.InvalidArgument }, codes);
                Assert.AreEqual(1, r.Discovery.Results[5].Endpoints.Count);
                Assert.AreEqual(2u, r.Discovery.Results[5].Endpoints[0].Port);
                CollectionAssert.AreEqual(new[] { "i1", "i1" }, r.Discovery.Results[6].Picks);
                var ev = new List<string>();
                foreach (DiscoveryEventMsg e in r.Discovery.Events) ev.Add(e.Watch + " " + e.Type + " " + e.Endpoint.InstanceId + ":" + e.Endpoint.Port);
                CollectionAssert.AreEqual(new[] { "0 1 i1:1", "0 1 i0:1", "0 3 i1:2", "0 2 i0:1" }, ev, "waited for its own writes' events");
                Assert.AreEqual(0, Kvs(etcd, "fp-test/testee").Count, "closed: lease revoked");

                r = Script(etcd, etcd.Endpoint, "fp-test/testee2", true, Reg("a"));
                Assert.AreEqual(0u, r.Discovery.Results[0].Code);
                Assert.AreEqual(1, Kvs(etcd, "fp-test/testee2").Count, "abandoned: the key stays (until its lease expires)");

                r = Script(etcd, etcd.Endpoint, "/bad", false, Reg("a"), new DiscoveryOpMsg { Kind = DiscoveryOpKind.Discover, Service = Svc });
                Assert.AreEqual(2, r.Discovery.Results.Count);
                foreach (DiscoveryResultMsg x in r.Discovery.Results) Assert.AreEqual((uint)DiscoveryCode.InvalidArgument, x.Code);
            }
            var sw = Stopwatch.StartNew();
            TesteeResponseMsg down = Script(null, "127.0.0.1:" + LocalEtcd.FreePort(), "fp-test/down", false, Reg("a"), new DiscoveryOpMsg { Kind = DiscoveryOpKind.Discover, Service = Svc });
            Assert.AreEqual((uint)DiscoveryCode.ConnectionError, down.Discovery.Results[0].Code);
            Assert.AreEqual((uint)DiscoveryCode.ConnectionError, down.Discovery.Results[1].Code);
            Assert.Less(sw.Elapsed.TotalSeconds, 3.5);
        }
    }
}
