using System;
using System.Collections.Generic;
using System.Globalization;
using System.IO;
using System.Text;
using System.Threading;
using Frameproof.Discovery;

namespace Frameproof.DiscoveryBench
{
    /// <summary>
    /// fp-discovery-bench: upstream's B3 (galay-rpc benchmark/b3_discovery.cpp) and the case it
    /// avoided, beside upstream's reported B3 figure (spec/discovery.md §9); the same command line and
    /// JSON as the Rust fp-discovery-bench, plus the key "upstream". Every worker loops register →
    /// discover → deregister (3 operations per round) with upstream's endpoint shape (service
    /// BenchService&lt;w % 10&gt;, instance instance-&lt;w&gt;, port 9000 + w % 100, weight 100). Modes: private (a registry per worker: B3, never contended),
    /// shared (one registry for all workers), hot (one registry and one service). Workers are OS threads.
    /// <c>--etcd ENDPOINTS</c> measures the etcd registry instead (EtcdBench.cs).
    /// </summary>
    public static class Program
    {
        /// <summary>B3 as galay-rpc's performance report gave it (github.com/gzj-creator/galay-rpc,
        /// docs/05 at commit 4003c9b, since stripped of figures; the benchmark was
        /// benchmark/B3-ServiceDiscoveryBench.cpp, today b3_discovery.cpp).</summary>
        const double UpstreamOpsPerS = 5432424.0;
        const string UpstreamWhere = "galay-rpc B3 (benchmark/B3-ServiceDiscoveryBench.cpp, docs/05 at 4003c9b): 100 coroutine workers, 2 IO schedulers, private registries, Apple M4";
        internal const string Usage = "usage: fp-discovery-bench [--threads N] [--seconds S] [--mode private|shared|hot|both|all] [--json FILE]\n" +
                                      "       fp-discovery-bench --etcd ENDPOINTS [--threads N] [--seconds S] [--samples N] [--json FILE]";

        sealed class Outcome { public string Mode; public int Threads; public long Ops, Errors; public double Seconds; }

        static int UsageError(string msg) { Console.Error.WriteLine("usage error: " + msg + "\n" + Usage); return 2; }

        public static int Main(string[] args)
        {
            int threads = Environment.ProcessorCount;
            double seconds = 2.0;
            string[] modes = { "private", "shared" };
            string json = null;
            string etcd = null;
            int samples = 200;
            bool modeGiven = false, samplesGiven = false;
            for (int i = 0; i < args.Length; i++)
            {
                if (args[i] == "--help") { Console.WriteLine(Usage); return 0; }
                if (i + 1 >= args.Length) return UsageError(args[i] + " needs a value");
                string v = args[++i];
                switch (args[i - 1])
                {
                    case "--threads":
                        if (!int.TryParse(v, out threads) || threads < 1 || threads > 1024) return UsageError("bad --threads");
                        break;
                    case "--seconds":
                        if (!double.TryParse(v, NumberStyles.Float, CultureInfo.InvariantCulture, out seconds) || seconds <= 0 || seconds > 600) return UsageError("bad --seconds");
                        break;
                    case "--mode":
                        modeGiven = true;
                        switch (v)
                        {
                            case "private": modes = new[] { "private" }; break;
                            case "shared": modes = new[] { "shared" }; break;
                            case "hot": modes = new[] { "hot" }; break;
                            case "both": modes = new[] { "private", "shared" }; break;
                            case "all": modes = new[] { "private", "shared", "hot" }; break;
                            default: return UsageError("--mode is private, shared, hot, both or all");
                        }
                        break;
                    case "--json": json = v; break;
                    case "--etcd": etcd = v; break;
                    case "--samples":
                        if (!int.TryParse(v, NumberStyles.None, CultureInfo.InvariantCulture, out samples) || samples < 1 || samples > 1000000) return UsageError("bad --samples");
                        samplesGiven = true;
                        break;
                    default: return UsageError("unknown flag " + args[i - 1]);
                }
            }
            if (etcd != null)
            {
                if (modeGiven) return UsageError("--mode is for the in-process registry, not --etcd");
                return EtcdBench.Run(etcd, threads, seconds, samples, json);
            }
            if (samplesGiven) return UsageError("--samples needs --etcd");
            var outs = new List<Outcome>();
            foreach (string mode in modes)
            {
                Outcome o = Run(mode, threads, seconds);
                double rate = o.Ops / o.Seconds;
                Console.WriteLine(string.Format(CultureInfo.InvariantCulture,
                    "{0,-8} {1} threads, {2:F1} s: {3} ops ({4} rounds), {5} errors, {6:F0} ops/s = {7:F2}x upstream's {8:F0} ops/s ({9})",
                    o.Mode, o.Threads, o.Seconds, o.Ops, o.Ops / 3, o.Errors, rate, rate / UpstreamOpsPerS, UpstreamOpsPerS, UpstreamWhere));
                outs.Add(o);
            }
            if (json != null)
            {
                var sb = new StringBuilder();
                sb.Append("{\n  \"implementation\": \"csharp\",\n  \"benchmark\": \"discovery-b3\",\n  \"runs\": [");
                for (int i = 0; i < outs.Count; i++)
                {
                    Outcome o = outs[i];
                    // ops_per_s formatted apart: in "{5:F1}}}" the closing braces would be read as part
                    // of the format ("F1}"), which prints "F1".
                    sb.Append(i == 0 ? "\n" : ",\n").Append(string.Format(CultureInfo.InvariantCulture,
                        "    {{\"mode\": \"{0}\", \"threads\": {1}, \"ops\": {2}, \"errors\": {3}, \"duration_s\": {4:F6}, \"ops_per_s\": {5}}}",
                        o.Mode, o.Threads, o.Ops, o.Errors, o.Seconds, (o.Ops / o.Seconds).ToString("F1", CultureInfo.InvariantCulture)));
                }
                // "upstream": the figure compared with; "seed": the same object under its earlier key,
                // kept for readers of reports written before (all three implementations write both).
                string upstream = string.Format(CultureInfo.InvariantCulture, "{{\"ops_per_s\": {0:F1}, \"where\": \"{1}\"}}", UpstreamOpsPerS, UpstreamWhere);
                sb.Append("\n  ],\n  \"upstream\": ").Append(upstream).Append(",\n  \"seed\": ").Append(upstream).Append("\n}\n");
                try { File.WriteAllText(json, sb.ToString()); }
                catch (Exception e) { Console.Error.WriteLine("cannot write " + json + ": " + e.Message); return 1; }
            }
            foreach (Outcome o in outs) if (o.Errors > 0) return 1;
            return 0;
        }

        static Outcome Run(string mode, int threads, double seconds)
        {
            var shared = new ServiceRegistry();
            long ops = 0, errors = 0;
            bool stop = false;
            var ts = new Thread[threads];
            var sw = System.Diagnostics.Stopwatch.StartNew();
            for (int w = 0; w < threads; w++)
            {
                int me = w;
                ServiceRegistry reg = mode == "private" ? new ServiceRegistry() : shared;
                ts[w] = new Thread(() =>
                {
                    var ep = new ServiceEndpoint("BenchService" + (mode == "hot" ? 0 : me % 10), "instance-" + me, "127.0.0.1", (uint)(9000 + me % 100), 100);
                    long n = 0, bad = 0;
                    while (!Volatile.Read(ref stop))
                    {
                        for (int k = 0; k < 64; k++)
                        {
                            if (reg.Register(ep) == DiscoveryCode.Ok) n++; else bad++;
                            EndpointList l;
                            bool found = false;
                            if (reg.Discover(ep.Service, out l) == DiscoveryCode.Ok)
                                for (int i = 0; i < l.Count && !found; i++) found = (object)l[i] == ep;
                            if (found) n++; else bad++;
                            if (reg.Deregister(ep.Service, ep.InstanceId) == DiscoveryCode.Ok) n++; else bad++;
                        }
                    }
                    Interlocked.Add(ref ops, n);
                    Interlocked.Add(ref errors, bad);
                }) { IsBackground = true };
                ts[w].Start();
            }
            Thread.Sleep(TimeSpan.FromSeconds(seconds));
            Volatile.Write(ref stop, true);
            foreach (Thread t in ts) t.Join();
            return new Outcome { Mode = mode, Threads = threads, Ops = ops, Errors = errors, Seconds = sw.Elapsed.TotalSeconds };
        }
    }
}
