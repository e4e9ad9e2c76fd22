using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Globalization;
using System.IO;
using System.Runtime.InteropServices;
using System.Text;
using Frameproof.Codec;

namespace Frameproof.Bench
{
    /// <summary>
    /// The micro-benchmark contract (tools/bench/microbench.md): the cases defined once for every
    /// implementation, the command line <c>--case NAME --iterations N --json FILE [--samples S]
    /// [--warmup W]</c> and <c>--list</c>, and one JSON shape (tools/bench/microbench.schema.json).
    /// Generic over the registry: each protocol's module supplies its requests, its server decoder and
    /// reply encoder (<see cref="FrameCodec.BenchRequest"/>, <see cref="FrameCodec.NewBenchDecoder"/>,
    /// <see cref="FrameCodec.WriteBenchReply"/>) and any protocol-specific case.
    /// </summary>
    public static class Micro
    {
        const string Usage = "usage: fp-bench --case NAME --iterations N --json FILE [--samples S] [--warmup W] | fp-bench --list";
        static readonly int[] Payloads = { 32, 1024, 65536 };
        static readonly int[] FramesPerRead = { 1, 16 };

        sealed class Case { public string Name, Protocol, Op; public int Payload, Frames; public FrameCodec Codec; public BenchIteration Extra; }

        public static bool Wants(string[] args)
        {
            foreach (string a in args) if (a == "--case" || a == "--list") return true;
            return false;
        }

        static IEnumerable<Case> Catalog()
        {
            foreach (string name in Registry.Names)
            {
                ProtocolModule m = Registry.Find(name);
                foreach (string op in new[] { "decode", "encode" })
                    foreach (int p in Payloads)
                        foreach (int f in FramesPerRead)
                            yield return new Case { Name = name + "/" + op + "/" + p + "/" + f, Protocol = name, Op = op, Payload = p, Frames = f, Codec = m.Create(m.BenchSpec(p)) };
                FrameCodec c = m.Create(m.BenchSpec(32));
                foreach (KeyValuePair<string, BenchIteration> kv in c.BenchExtraCases)
                {
                    string[] parts = kv.Key.Split('/');
                    yield return new Case { Name = name + "/" + kv.Key, Protocol = name, Op = parts[0], Payload = int.Parse(parts[1], CultureInfo.InvariantCulture),
                        Frames = int.Parse(parts[2], CultureInfo.InvariantCulture), Codec = c, Extra = kv.Value };
                }
            }
        }

        static int UsageError(string msg) { Console.Error.WriteLine("usage error: " + msg + "\n" + Usage); return 2; }

        public static int Run(string[] args)
        {
            string caseName = null, json = null;
            long iterations = 0, samples = 11, warmup = -1;
            bool list = false;
            for (int i = 0; i < args.Length; i++)
            {
                string a = args[i];
                if (a == "--list") { list = true; continue; }
                if (i + 1 >= args.Length) return UsageError(a + " needs a value");
                string v = args[++i];
                long n;
                bool num = long.TryParse(v, NumberStyles.None, CultureInfo.InvariantCulture, out n);
                switch (a)
                {
                    case "--case": caseName = v; break;
                    case "--json": json = v; break;
                    case "--iterations": if (!num || n < 1) return UsageError("--iterations must be a positive integer"); iterations = n; break;
                    case "--samples": if (!num || n < 1) return UsageError("--samples must be a positive integer"); samples = n; break;
                    case "--warmup": if (!num) return UsageError("--warmup must be a non-negative integer"); warmup = n; break;
                    default: return UsageError("unknown option " + a);
                }
            }
            if (list)
            {
                foreach (Case c in Catalog()) Console.WriteLine(c.Name);
                return 0;
            }
            if (caseName == null || json == null || iterations == 0) return UsageError("--case, --iterations and --json are required");
            Case k = null;
            foreach (Case c in Catalog()) if (c.Name == caseName) k = c;
            if (k == null)
            {
                Console.Error.WriteLine("fp-bench: case '" + caseName + "' is not implemented here");
                return 3;
            }
            if (warmup < 0) warmup = Math.Max(1, iterations / 10);

            int bytesPerFrame;
            Func<long, long> run = Prepare(k, out bytesPerFrame);
            long check = run(warmup);
            var per = new double[samples];
            long allocated = 0;
            for (long s = 0; s < samples; s++)
            {
                long a0 = GC.GetAllocatedBytesForCurrentThread();
                long t0 = Stopwatch.GetTimestamp();
                check += run(iterations);
                long t1 = Stopwatch.GetTimestamp();
                if (s == 0) allocated = GC.GetAllocatedBytesForCurrentThread() - a0;
                per[s] = (t1 - t0) * (1e9 / Stopwatch.Frequency) / ((double)iterations * k.Frames);
            }
            Array.Sort(per);
            var inv = CultureInfo.InvariantCulture;
            var sb = new StringBuilder();
            sb.Append("{\"schema\": \"frameproof-microbench/1\", \"implementation\": \"csharp\", \"case\": ").Append(CodecJson.Quote(k.Name))
              .Append(", \"protocol\": ").Append(CodecJson.Quote(k.Protocol)).Append(", \"op\": ").Append(CodecJson.Quote(k.Op))
              .Append(", \"payload\": ").Append(k.Payload).Append(", \"frames_per_read\": ").Append(k.Frames)
              .Append(", \"iterations\": ").Append(iterations).Append(", \"samples\": ").Append(samples).Append(", \"warmup_iterations\": ").Append(warmup)
              .Append(", \"ns_per_frame\": {\"median\": ").Append(Math.Max(0.001, per[per.Length / 2]).ToString("0.###", inv))
              .Append(", \"min\": ").Append(Math.Max(0.001, per[0]).ToString("0.###", inv))
              .Append(", \"max\": ").Append(Math.Max(0.001, per[per.Length - 1]).ToString("0.###", inv)).Append(", \"n\": ").Append(per.Length).Append('}')
              .Append(", \"bytes_per_frame\": ").Append(bytesPerFrame)
              .Append(", \"allocs_per_frame\": null, \"bytes_alloc_per_frame\": ").Append((allocated / ((double)iterations * k.Frames)).ToString("0.###", inv))
              .Append(", \"allocation_counter\": \"GC.GetAllocatedBytesForCurrentThread (bytes only)\", \"instructions_per_frame\": null")
              .Append(", \"checksum\": ").Append(check & ((1L << 62) - 1)).Append("}\n");
            try { File.WriteAllText(json, sb.ToString()); }
            catch (Exception e) { Console.Error.WriteLine("fp-bench: cannot write " + json + ": " + e.Message); return 1; }
            return 0;
        }

        /// <summary>N iterations of <paramref name="one"/>; returns the sum of their checksums.</summary>
        static Func<long, long> Loop(BenchIteration one)
        {
            return n =>
            {
                long c = 0;
                for (long i = 0; i < n; i++) c += one();
                return c;
            };
        }

        /// <summary>Builds the case's inputs once; returns the loop of N iterations (the sum of their
        /// checksums).</summary>
        static unsafe Func<long, long> Prepare(Case k, out int bytesPerFrame)
        {
            if (k.Extra != null) { bytesPerFrame = k.Payload; return Loop(k.Extra); }
            FrameCodec codec = k.Codec;
            var payloads = new byte[k.Frames][];
            var wire = new List<byte>();
            for (int i = 0; i < k.Frames; i++)
            {
                payloads[i] = PayloadFor(i, k.Payload);
                wire.AddRange(codec.BenchRequest(i, payloads[i]));
            }
            if (k.Op == "decode")
            {
                byte[] read = wire.ToArray();
                bytesPerFrame = read.Length / k.Frames;
                // The connection's receive buffer, kept across iterations: pinned memory, as fp-server's
                // epoll loop receives into (a native buffer) and hands to the session as a span.
                var rx = new byte[read.Length];
                byte* readPtr = (byte*)GCHandle.Alloc(read, GCHandleType.Pinned).AddrOfPinnedObject();
                byte* rxPtr = (byte*)GCHandle.Alloc(rx, GCHandleType.Pinned).AddrOfPinnedObject();
                int readSize = read.Length;
                BenchDecoder dec = codec.NewBenchDecoder();
                int frames = k.Frames;
                // the iterations in one loop here, not a delegate call each: Mono's delegate call cost
                // about as much as the decoding of a 32-byte frame's header
                return iterations =>
                {
                    long before = dec.Checksum;
                    for (long i = 0; i < iterations; i++)
                    {
                        ByteBuffers.Copy(rxPtr, readPtr, readSize);   // the read lands in the buffer (a memcpy)
                        long n0 = dec.Frames;
                        if (!dec.Feed(new ReadOnlySpan<byte>(rxPtr, readSize)) || dec.Frames - n0 != frames)
                            throw new InvalidOperationException("the decoder did not give the read's " + frames + " frames");
                    }
                    return dec.Checksum - before;
                };
            }
            // encode: F replies into a reused buffer
            int total = 0;
            for (int i = 0; i < k.Frames; i++) total += codec.BenchReplyLength(payloads[i].Length);
            bytesPerFrame = codec.BenchReplyLength(k.Payload);
            var src = new byte[k.Frames * k.Payload];
            for (int i = 0; i < k.Frames; i++) Buffer.BlockCopy(payloads[i], 0, src, i * k.Payload, k.Payload);
            var output = new byte[total];   // the reply buffer, cleared (length 0) and refilled each iteration
            int count = k.Frames, size = k.Payload;
            // the payloads as the server has them: spans over its (pinned) receive buffer
            byte* payloadPtr = (byte*)GCHandle.Alloc(src, GCHandleType.Pinned).AddrOfPinnedObject();
            return Loop(() =>
            {
                int len = 0;
                for (int i = 0; i < count; i++)
                {
                    int need = codec.BenchReplyLength(size);   // the reservation, as the session's ReserveAt
                    if (len + need > output.Length) throw new InvalidOperationException("reply buffer too small");
                    len += codec.WriteBenchReply(i, new ReadOnlySpan<byte>(payloadPtr + i * size, size), output, len);
                }
                return len + output[len - 1];
            });
        }

        /// <summary>The suite's payload_for(i, n): the 8 little-endian bytes of i, repeated, cut to n.</summary>
        static byte[] PayloadFor(long i, int n)
        {
            var p = new byte[n];
            for (int j = 0; j < n; j++) p[j] = (byte)((ulong)i >> (8 * (j % 8)));
            return p;
        }
    }
}
