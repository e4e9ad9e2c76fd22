using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Globalization;
using System.IO;
using System.Text;
using System.Threading;
using Frameproof.Discovery;

namespace Frameproof.DiscoveryBench
{
    /// <summary>
    /// <c>--etcd ENDPOINTS</c>: the benchmark on the etcd registry (spec/discovery.md §9, "On etcd"),
    /// under the key prefix <c>fpbench/csharp-&lt;pid&gt;</c>. register: W threads share one
    /// <see cref="EtcdRegistry"/> (one lease), each re-registering its own instance for S seconds;
    /// discover: W threads discover BenchService for S seconds (an answer without all W instances is
    /// an error); watch: a second registry watches WatchBench while the first registers w-0 .. w-(N-1)
    /// one at a time, each sample timed from just before the register call to the watcher's ADDED
    /// callback (lost after 5 s). Percentiles nearest-rank, in microseconds. The same lines and JSON
    /// as the Rust fp-discovery-bench's on_etcd.rs.
    /// </summary>
    static class EtcdBench
    {
        static readonly TimeSpan LostAfter = TimeSpan.FromSeconds(5);

        sealed class Phase
        {
            public string Op;
            public long Ops, Errors, Lost;
            public double Seconds;
            public readonly List<long> Ticks = new List<long>();   // each call's (or sample's) latency, Stopwatch ticks
            public double P50, P99, Max;                             // microseconds, once Finish ran

            public void Finish()
            {
                Ticks.Sort();
                P50 = Round1(Us(Percentile(Ticks, 50)));
                P99 = Round1(Us(Percentile(Ticks, 99)));
                Max = Round1(Us(Ticks.Count == 0 ? 0 : Ticks[Ticks.Count - 1]));
            }
        }

        /// <summary>Nearest rank: the ⌈p·n/100⌉-th smallest (integer arithmetic: no 0.99·200 rounding).</summary>
        static long Percentile(List<long> sorted, int percent)
        {
            if (sorted.Count == 0) return 0;
            long rank = ((long)percent * sorted.Count + 99) / 100;
            if (rank < 1) rank = 1;
            if (rank > sorted.Count) rank = sorted.Count;
            return sorted[(int)rank - 1];
        }

        static double Us(long ticks) { return ticks * 1e6 / Stopwatch.Frequency; }
        static double Round1(double x) { return Math.Round(x * 10.0, MidpointRounding.AwayFromZero) / 10.0; }
        static string F1(double x) { return x.ToString("F1", CultureInfo.InvariantCulture); }

        static ServiceEndpoint Endpoint(string service, string id, int w)
        {
            return new ServiceEndpoint(service, id, "127.0.0.1", (uint)(9000 + w), 100);
        }

        /// <summary>Runs the three phases, prints a line per phase, writes the JSON; answers the exit
        /// status (1 on any error or lost sample, or when etcd does not answer; 2 for an endpoint that
        /// is not host:port).</summary>
        public static int Run(string endpoints, int threads, double seconds, int samples, string json)
        {
            string prefix = "fpbench/csharp-" + Process.GetCurrentProcess().Id.ToString(CultureInfo.InvariantCulture);
            EtcdRegistry reg = null, watcher = null;
            var phases = new List<Phase>();
            try
            {
                try
                {
                    reg = new EtcdRegistry(endpoints, prefix);
                    watcher = new EtcdRegistry(endpoints, prefix);   // "as another process would": its own connections
                }
                catch (ArgumentException e)
                {
                    Console.Error.WriteLine("usage error: --etcd: " + e.Message + "\n" + Program.Usage);
                    return 2;
                }
                // One read first, so that an etcd that does not answer fails at once (within the
                // request timeout) rather than as every call of every phase.
                EndpointList probe;
                DiscoveryCode code = reg.Discover("BenchService", out probe);
                if (code != DiscoveryCode.Ok)
                {
                    Console.Error.WriteLine(string.Format(CultureInfo.InvariantCulture,
                        "cannot reach etcd at {0}: {1} (no answer within {2:F0} s)", endpoints, code, reg.RequestTimeout.TotalSeconds));
                    return 1;
                }
                EtcdRegistry r = reg;
                phases.Add(Timed("register", threads, seconds, w => r.Register(Endpoint("BenchService", "instance-" + w, w)) == DiscoveryCode.Ok));
                phases.Add(Timed("discover", threads, seconds, w =>
                {
                    EndpointList l;
                    return r.Discover("BenchService", out l) == DiscoveryCode.Ok && l.Count == threads;
                }));
                phases.Add(Watch(reg, watcher, samples));
                for (int w = 0; w < threads; w++) reg.Deregister("BenchService", "instance-" + w);
            }
            finally
            {
                if (watcher != null) watcher.Dispose();   // unwatches; it holds no lease
                if (reg != null) reg.Dispose();           // revokes the lease: whatever is left goes
            }

            foreach (Phase p in phases)
            {
                p.Finish();
                if (p.Op == "watch")
                    Console.WriteLine(string.Format(CultureInfo.InvariantCulture,
                        "watch    {0} samples, {1} lost, {2} errors: PUT -> callback p50 {3} us, p99 {4} us, max {5} us",
                        p.Ops + p.Lost + p.Errors, p.Lost, p.Errors, F1(p.P50), F1(p.P99), F1(p.Max)));
                else
                    Console.WriteLine(string.Format(CultureInfo.InvariantCulture,
                        "{0,-8} {1} threads, {2:F1} s: {3} ops, {4} errors, {5} ops/s, p50 {6} us, p99 {7} us",
                        p.Op, threads, p.Seconds, p.Ops, p.Errors, F1(p.Ops / p.Seconds), F1(p.P50), F1(p.P99)));
            }
            if (json != null)
            {
                var sb = new StringBuilder();
                sb.Append("{\n  \"implementation\": \"csharp\",\n  \"benchmark\": \"discovery-etcd\",\n  \"endpoints\": [");
                bool first = true;
                foreach (string part in endpoints.Split(','))
                {
                    string e = part.Trim();
                    if (e.Length == 0) continue;
                    sb.Append(first ? "" : ", ").Append('"').Append(e.Replace("\\", "\\\\").Replace("\"", "\\\"")).Append('"');
                    first = false;
                }
                sb.Append("],\n  \"threads\": ").Append(threads.ToString(CultureInfo.InvariantCulture)).Append(",\n  \"runs\": [");
                for (int i = 0; i < phases.Count; i++)
                {
                    Phase p = phases[i];
                    // numbers formatted apart: a format item right before "}}" would read the braces
                    // as part of its format (see Program.cs)
                    sb.Append(i == 0 ? "\n" : ",\n");
                    if (p.Op == "watch")
                        sb.Append(string.Format(CultureInfo.InvariantCulture,
                            "    {{\"op\": \"watch\", \"samples\": {0}, \"lost\": {1}, \"errors\": {2}, \"p50_us\": {3}, \"p99_us\": {4}, \"max_us\": {5}}}",
                            p.Ops + p.Lost + p.Errors, p.Lost, p.Errors, F1(p.P50), F1(p.P99), F1(p.Max)));
                    else
                        sb.Append(string.Format(CultureInfo.InvariantCulture,
                            "    {{\"op\": \"{0}\", \"ops\": {1}, \"errors\": {2}, \"duration_s\": {3}, \"ops_per_s\": {4}, \"p50_us\": {5}, \"p99_us\": {6}}}",
                            p.Op, p.Ops, p.Errors, p.Seconds.ToString("F6", CultureInfo.InvariantCulture), F1(p.Ops / p.Seconds), F1(p.P50), F1(p.P99)));
                }
                sb.Append("\n  ]\n}\n");
                try { File.WriteAllText(json, sb.ToString()); }
                catch (Exception e) { Console.Error.WriteLine("cannot write " + json + ": " + e.Message); return 1; }
            }
            foreach (Phase p in phases) if (p.Errors > 0 || p.Lost > 0) return 1;
            return 0;
        }

        /// <summary>W threads call <paramref name="call"/> (given the thread's number) for S seconds,
        /// each call timed.</summary>
        static Phase Timed(string op, int threads, double seconds, Func<int, bool> call)
        {
            var p = new Phase { Op = op };
            var ts = new Thread[threads];
            var sw = Stopwatch.StartNew();
            long until = Stopwatch.GetTimestamp() + (long)(seconds * Stopwatch.Frequency);
            for (int w = 0; w < threads; w++)
            {
                int me = w;
                ts[w] = new Thread(() =>
                {
                    long ok = 0, bad = 0;
                    var lat = new List<long>();
                    long t;
                    while ((t = Stopwatch.GetTimestamp()) < until)
                    {
                        bool good;
                        try { good = call(me); }
                        catch (Exception) { good = false; }
                        lat.Add(Stopwatch.GetTimestamp() - t);
                        if (good) ok++; else bad++;
                    }
                    lock (p)
                    {
                        p.Ops += ok;
                        p.Errors += bad;
                        p.Ticks.AddRange(lat);
                    }
                }) { IsBackground = true };
                ts[w].Start();
            }
            foreach (Thread t in ts) t.Join();
            p.Seconds = sw.Elapsed.TotalSeconds;
            return p;
        }

        /// <summary>The watcher watches WatchBench; the writer registers w-&lt;i&gt; one at a time and
        /// waits (at most 5 s) for the watcher's ADDED callback for it.</summary>
        static Phase Watch(EtcdRegistry writer, EtcdRegistry watcher, int samples)
        {
            var p = new Phase { Op = "watch" };
            var seen = new long[samples];   // Stopwatch timestamp of the ADDED callback; 0: none yet
            var gate = new object();
            long handle;
            DiscoveryCode code = watcher.Watch("WatchBench", (type, ep) =>
            {
                long at = Stopwatch.GetTimestamp();
                if (type != ServiceEventType.Added || !ep.InstanceId.StartsWith("w-", StringComparison.Ordinal)) return;
                int i;
                if (!int.TryParse(ep.InstanceId.Substring(2), NumberStyles.None, CultureInfo.InvariantCulture, out i) || i >= samples) return;
                lock (gate)
                {
                    if (seen[i] == 0) seen[i] = at;
                    Monitor.PulseAll(gate);
                }
            }, out handle);
            if (code != DiscoveryCode.Ok)
            {
                Console.Error.WriteLine("watch WatchBench: " + code);
                p.Errors = 1;
                return p;
            }
            var sw = Stopwatch.StartNew();
            int failedInARow = 0;
            for (int i = 0; i < samples && failedInARow < 3; i++)  // 3 failures in a row: etcd is gone
            {
                long t = Stopwatch.GetTimestamp();
                if (writer.Register(Endpoint("WatchBench", "w-" + i.ToString(CultureInfo.InvariantCulture), i % 100)) != DiscoveryCode.Ok)
                {
                    p.Errors++;
                    failedInARow++;
                    continue;
                }
                long lostAt = t + (long)(LostAfter.TotalSeconds * Stopwatch.Frequency);
                long at;
                lock (gate)
                {
                    while ((at = seen[i]) == 0)
                    {
                        long left = (lostAt - Stopwatch.GetTimestamp()) * 1000 / Stopwatch.Frequency;
                        if (left <= 0) break;
                        Monitor.Wait(gate, (int)Math.Min(left + 1, int.MaxValue));
                    }
                }
                if (at == 0) { p.Lost++; failedInARow++; }
                else
                {
                    failedInARow = 0;
                    p.Ops++;
                    p.Ticks.Add(at - t);
                }
            }
            p.Seconds = sw.Elapsed.TotalSeconds;
            watcher.Unwatch(handle);
            return p;
        }
    }
}
