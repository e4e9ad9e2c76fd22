using System;
using System.Collections.Generic;
using System.IO;
using System.Text;
using System.Threading;
using Frameproof.Codec;
using Frameproof.Discovery;
using Frameproof.Testee;
using NUnit.Framework;

namespace Frameproof.Tests
{
    /// <summary>The service registry (spec/discovery.md): operations, events, selectors, the etcd
    /// mapping, threads; and the testee's discovery messages against the golden bytes of
    /// conformance/testee-golden-discovery.json.</summary>
    [TestFixture]
    public class DiscoveryTests
    {
        static ServiceEndpoint Ep(string id, uint weight = 100, string svc = "svc") { return new ServiceEndpoint(svc, id, "10.0.0.1", 7000, weight); }

        static string[] Ids(ServiceRegistry r, string svc)
        {
            EndpointList l;
            Assert.AreEqual(DiscoveryCode.Ok, r.Discover(svc, out l));
            var ids = new string[l.Count];
            for (int i = 0; i < l.Count; i++) ids[i] = l[i].InstanceId;
            return ids;
        }

        [Test]
        public void Register_Replace_Deregister_Discover()
        {
            var r = new ServiceRegistry();
            var events = new List<string>();
            long h;
            Assert.AreEqual(DiscoveryCode.Ok, r.Watch("svc", (t, e) => events.Add(t + " " + e.InstanceId + " " + e.Port), out h));
            Assert.AreEqual(DiscoveryCode.Ok, r.Register(Ep("a")));
            Assert.AreEqual(DiscoveryCode.Ok, r.Register(Ep("b")));
            Assert.AreEqual(DiscoveryCode.Ok, r.Register(new ServiceEndpoint("svc", "a", "h", 9, 3)));   // DISC-REG-2: in place
            CollectionAssert.AreEqual(new[] { "a", "b" }, Ids(r, "svc"));
            Assert.AreEqual(DiscoveryCode.Ok, r.Deregister("svc", "a"));
            Assert.AreEqual(DiscoveryCode.NotFound, r.Deregister("svc", "a"));                        // DISC-REG-4
            Assert.AreEqual(DiscoveryCode.NotFound, r.Deregister("other", "a"));
            CollectionAssert.AreEqual(new[] { "b" }, Ids(r, "svc"));
            CollectionAssert.IsEmpty(Ids(r, "unknown"));                                               // DISC-REG-5
            CollectionAssert.AreEqual(new[] { "Added a 7000", "Added b 7000", "Updated a 9", "Removed a 9" }, events);
            Assert.AreEqual(DiscoveryCode.InvalidArgument, r.Register(new ServiceEndpoint("svc", "x/y", "h", 1)));   // DISC-EP-2
            Assert.AreEqual(DiscoveryCode.InvalidArgument, r.Register(new ServiceEndpoint("", "x", "h", 1)));
            Assert.AreEqual(DiscoveryCode.InvalidArgument, r.Register(new ServiceEndpoint("s", "x", "h", 65536)));
            Assert.AreEqual(DiscoveryCode.InvalidArgument, r.Register(new ServiceEndpoint("s", "x", "", 1)));
            Assert.AreEqual(4, events.Count, "failed operations cause no event");
        }

        [Test]
        public void Callbacks_RunOutsideTheLock_NestedEventsAfterTheCallback_UnwatchFromInside()
        {
            var r = new ServiceRegistry();
            var seen = new List<string>();
            long h1 = 0, h2;
            r.Watch("svc", (t, e) =>
            {
                seen.Add("w1 " + t + " " + e.InstanceId);
                if (e.InstanceId == "a")
                {
                    Assert.AreEqual(DiscoveryCode.Ok, r.Register(Ep("b")));    // would deadlock under the lock
                    seen.Add("w1 registered b");
                    Assert.AreEqual(DiscoveryCode.Ok, r.Unwatch(h1));          // its own handle
                }
            }, out h1);
            r.Watch("svc", (t, e) => seen.Add("w2 " + t + " " + e.InstanceId), out h2);
            r.Register(Ep("a"));
            CollectionAssert.AreEqual(new[] { "w1 Added a", "w1 registered b", "w2 Added a", "w2 Added b" }, seen);
            Assert.AreEqual(DiscoveryCode.NotFound, r.Unwatch(h1));
            Assert.AreEqual(DiscoveryCode.Ok, r.Unwatch(h2));
        }

        [Test]
        public void SmoothWeightedRoundRobin_5_1_1()
        {
            var r = new ServiceRegistry();
            r.Register(Ep("a", 5)); r.Register(Ep("b", 1)); r.Register(Ep("c", 1)); r.Register(Ep("z", 0));
            Selector s;
            Assert.AreEqual(DiscoveryCode.Ok, Selector.Create(r, "svc", "weighted-round-robin", null, out s));
            var sb = new StringBuilder();
            for (int i = 0; i < 14; i++) { ServiceEndpoint e; Assert.AreEqual(DiscoveryCode.Ok, s.Select(out e)); sb.Append(e.InstanceId); }
            Assert.AreEqual("aabacaaaabacaa", sb.ToString());
        }

        [Test]
        public void RoundRobin_SkipsDrained_NotFoundWhenNothingEligible()
        {
            var r = new ServiceRegistry();
            Selector s;
            Assert.AreEqual(DiscoveryCode.Ok, Selector.Create(r, "svc", "round-robin", null, out s));
            ServiceEndpoint e;
            Assert.AreEqual(DiscoveryCode.NotFound, s.Select(out e));
            r.Register(Ep("a")); r.Register(Ep("z", 0)); r.Register(Ep("b"));
            var sb = new StringBuilder();
            for (int i = 0; i < 5; i++) { s.Select(out e); sb.Append(e.InstanceId); }
            Assert.AreEqual("ababa", sb.ToString());
            Assert.AreEqual(DiscoveryCode.InvalidArgument, Selector.Create(r, "svc", "least-loaded", null, out s));
        }

        [TestCase("random")]
        [TestCase("weighted-random")]
        public void RandomSelectors_SameSeedSameSequence_DistributionWithinChiSquare(string name)
        {
            var r = new ServiceRegistry();
            uint[] w = { 1, 2, 3, 4 };
            for (int i = 0; i < w.Length; i++) r.Register(Ep("i" + i, w[i]));
            r.Register(Ep("drained", 0));
            Selector a, b;
            Selector.Create(r, "svc", name, 7UL, out a);
            Selector.Create(r, "svc", name, 7UL, out b);
            int n = 8000;
            var counts = new Dictionary<string, int>();
            for (int i = 0; i < n; i++)
            {
                ServiceEndpoint x, y;
                a.Select(out x); b.Select(out y);
                Assert.AreEqual(x.InstanceId, y.InstanceId, "DISC-SEL-5");
                int c; counts.TryGetValue(x.InstanceId, out c); counts[x.InstanceId] = c + 1;
            }
            Assert.IsFalse(counts.ContainsKey("drained"));
            double chi = 0;
            for (int i = 0; i < w.Length; i++)
            {
                double expected = name == "random" ? n / 4.0 : n * w[i] / 10.0;
                int got; counts.TryGetValue("i" + i, out got);
                chi += (got - expected) * (got - expected) / expected;
            }
            Assert.Less(chi, 16.27, "chi-square, 3 degrees of freedom, 0.999 quantile");
        }

        [Test]
        public void Threads_SharedRegistry_NoLostUpdate_EventsCounted_RoundRobinEven()
        {
            var r = new ServiceRegistry();
            int added = 0, removed = 0;
            long h;
            r.Watch("svc", (t, e) => { if (t == ServiceEventType.Added) Interlocked.Increment(ref added); else Interlocked.Increment(ref removed); }, out h);
            const int threads = 8, rounds = 500;
            var ts = new Thread[threads];
            for (int t = 0; t < threads; t++)
            {
                int me = t;
                ts[t] = new Thread(() =>
                {
                    for (int i = 0; i < rounds; i++)
                    {
                        r.Register(Ep("c" + me + "-" + i));
                        if (i % 2 == 1) r.Deregister("svc", "c" + me + "-" + i);
                    }
                });
                ts[t].Start();
            }
            foreach (Thread t in ts) Assert.IsTrue(t.Join(30000));
            r.Deliver();
            Assert.AreEqual(threads * rounds, added);
            Assert.AreEqual(threads * rounds / 2, removed);
            Assert.AreEqual(threads * rounds / 2, Ids(r, "svc").Length);
            Selector s;
            Selector.Create(r, "svc", "round-robin", null, out s);
            var counts = new Dictionary<string, int>();
            var pickers = new Thread[4];
            for (int t = 0; t < pickers.Length; t++)
            {
                pickers[t] = new Thread(() =>
                {
                    for (int i = 0; i < 1000; i++)
                    {
                        ServiceEndpoint e; s.Select(out e);
                        lock (counts) { int c; counts.TryGetValue(e.InstanceId, out c); counts[e.InstanceId] = c + 1; }
                    }
                });
                pickers[t].Start();
            }
            foreach (Thread t in pickers) Assert.IsTrue(t.Join(30000));
            Assert.AreEqual(2000, counts.Count);
            foreach (int c in counts.Values) Assert.AreEqual(2, c, "4000 concurrent picks over 2000 instances: each twice (DISC-THREAD-2)");
        }

        [Test]
        public void Etcd_Encode_Decode()
        {
            byte[] k, v;
            Assert.AreEqual(DiscoveryCode.Ok, EtcdMapping.Encode("frameproof/services", new ServiceEndpoint("frameproof.Echo", "echo-1", "127.0.0.1", 7000), out k, out v));
            Assert.AreEqual("/frameproof/services/frameproof.Echo/echo-1", Encoding.UTF8.GetString(k));
            Assert.AreEqual("{\"service\":\"frameproof.Echo\",\"instance_id\":\"echo-1\",\"host\":\"127.0.0.1\",\"port\":7000,\"weight\":100}", Encoding.UTF8.GetString(v));
            ServiceEndpoint e;
            Assert.AreEqual(DiscoveryCode.Ok, EtcdMapping.Decode("frameproof/services", k, v, out e));
            Assert.AreEqual("echo-1", e.InstanceId);
            Assert.AreEqual(DiscoveryCode.Ok, EtcdMapping.Decode("p", Encoding.UTF8.GetBytes("/p/s/i"),
                Encoding.UTF8.GetBytes("  {\"zone\":{\"a\":[1]},\"service\":\"s\",\"instance_id\":\"i\",\"host\":\"h\",\"port\":1}\n"), out e));
            Assert.AreEqual(100u, e.Weight);
            foreach (string bad in new[] { "{\"service\":\"s\",\"instance_id\":\"i\",\"host\":\"h\",\"port\":1.5}",
                                           "{\"service\":\"s\",\"instance_id\":\"i\",\"host\":\"h\",\"port\":true}",
                                           "{\"service\":\"s\",\"instance_id\":\"j\",\"host\":\"h\",\"port\":1}",
                                           "{\"service\":\"s\",\"instance_id\":\"i\",\"host\":\"h\",\"port\":1,\"weight\":4294967296}",
                                           "[1]", "{" })
                Assert.AreEqual(DiscoveryCode.InvalidArgument, EtcdMapping.Decode("p", Encoding.UTF8.GetBytes("/p/s/i"), Encoding.UTF8.GetBytes(bad), out e), bad);
            Assert.AreEqual(DiscoveryCode.InvalidArgument, EtcdMapping.Encode("/p", Ep("a"), out k, out v));
        }

        // ---------------------------------------------------------------- golden bytes

        static Dictionary<string, byte[]> Golden()
        {
            string dir = Path.GetDirectoryName(typeof(DiscoveryTests).Assembly.Location);
            for (; dir != null; dir = Path.GetDirectoryName(dir))
            {
                string p = Path.Combine(dir, "conformance", "testee-golden-discovery.json");
                if (!File.Exists(p)) continue;
                var d = new Dictionary<string, byte[]>();
                foreach (JsonValue e in JsonValue.Parse(File.ReadAllText(p)).Items)
                {
                    JsonValue name, hex;
                    var m = e.AsObject("entry");
                    CodecJson.TryGet(m, "name", out name);
                    CodecJson.TryGet(m, "hex", out hex);
                    d[name.AsString("name")] = T.Hex(hex.AsString("hex"));
                }
                return d;
            }
            throw new FileNotFoundException("conformance/testee-golden-discovery.json");
        }

        [Test]
        public void GoldenRequest_ParsesEveryField_AndReEncodes()
        {
            byte[] bytes = Golden()["discovery_request"];
            TesteeRequestMsg m = TesteeRequestMsg.Parse(bytes);
            Assert.AreEqual(RequestKind.Discovery, m.Kind);
            DiscoveryRequestMsg d = m.Discovery;
            Assert.AreEqual("rpc", d.Codec.Protocol);
            Assert.AreEqual(10, d.Ops.Count);
            Assert.AreEqual("svc.\u00e9cho", d.Ops[0].Endpoint.Service);
            Assert.AreEqual(65535u, d.Ops[0].Endpoint.Port);
            Assert.AreEqual(0xFFFFFFFFu, d.Ops[0].Endpoint.Weight);
            Assert.AreEqual(300u, d.Ops[3].OnFirstEvent.Number);
            Assert.AreEqual(70000u, d.Ops[4].Number);
            Assert.AreEqual(0x123456789ABCDEF0UL, d.Ops[5].Seed);
            Assert.AreEqual(2000u, d.Ops[5].Count);
            Assert.AreEqual("{\"port\":1}", Encoding.UTF8.GetString(d.Ops[7].Value));
            Assert.AreEqual(10000u, d.Ops[8].Rounds);
            Assert.AreEqual(DiscoveryOpKind.WaitMs, d.Ops[9].Kind);
            Assert.AreEqual(70000u, d.Ops[9].Number);
            Assert.IsTrue(d.HasEtcd);
            Assert.AreEqual(70000u, d.EtcdRequestTimeoutMs);
            Assert.IsTrue(d.EtcdAbandon);
            Assert.AreEqual(bytes, d.ToTesteeBytes());
        }

        [TestCase("discovery_response")]
        [TestCase("discovery_response_skipped")]
        [TestCase("discovery_response_runtime_error")]
        public void GoldenResponse_ReEncodesByteForByte(string name)
        {
            byte[] bytes = Golden()[name];
            TesteeResponseMsg m = TesteeResponseMsg.Parse(bytes);
            Assert.AreEqual(bytes, m.ToBytes());
            if (name == "discovery_response")
            {
                Assert.AreEqual(70000u, m.Discovery.Results[0].Added);
                Assert.AreEqual(3u, m.Discovery.Events[0].Type);
                Assert.AreEqual(1u, m.Discovery.Events[0].Nested.Code);
            }
        }

        [Test]
        public void Testee_AnswersAScript_AndRunsEtcdScripts()
        {
            var req = new DiscoveryRequestMsg();
            req.Codec.Protocol = "rpc";
            req.Ops.Add(new DiscoveryOpMsg { Kind = DiscoveryOpKind.Watch, Service = "s" });
            req.Ops.Add(new DiscoveryOpMsg { Kind = DiscoveryOpKind.Register, Endpoint = new DiscoveryEndpointMsg { Service = "s", InstanceId = "i", Host = "h", Port = 1, Weight = 1 } });
            req.Ops.Add(new DiscoveryOpMsg { Kind = DiscoveryOpKind.Select, SelectorId = 1, Service = "s", Selector = "round-robin", Count = 2 });
            TesteeResponseMsg r = TesteeResponseMsg.Parse(TesteeService.Handle(TesteeRequestMsg.Parse(req.ToTesteeBytes())).ToBytes());
            Assert.AreEqual(ResponseKind.Discovery, r.Kind);
            Assert.AreEqual(3, r.Discovery.Results.Count);
            CollectionAssert.AreEqual(new[] { "i", "i" }, r.Discovery.Results[2].Picks);
            Assert.AreEqual(1, r.Discovery.Events.Count);
            Assert.AreEqual(1u, r.Discovery.Events[0].Op);
            // with etcd set the script runs on the etcd registry (EtcdRegistryTests); a prefix it
            // rejects (here empty) answers INVALID_ARGUMENT for every op, without contacting etcd
            req.HasEtcd = true;
            r = TesteeService.Handle(TesteeRequestMsg.Parse(req.ToTesteeBytes()));
            Assert.AreEqual(ResponseKind.Discovery, r.Kind);
            Assert.AreEqual(3, r.Discovery.Results.Count);
            foreach (DiscoveryResultMsg x in r.Discovery.Results) Assert.AreEqual((uint)DiscoveryCode.InvalidArgument, x.Code);
        }
    }
}
