using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Globalization;
using System.IO;
using System.Net;
using System.Net.Sockets;
using System.Text;
using System.Threading;
using System.Threading.Tasks;
using Frameproof.Codec;

namespace Frameproof.Load
{
    enum Mode { PerPacket, Pipelined, Receive, Stream, Batched }

    sealed class LoadConfig
    {
        public FrameCodec Codec;
        public IPEndPoint Endpoint;
        public int Connections;
        public long Requests = -1;       // --requests, or -1
        public double Duration = -1;     // --duration seconds, or -1
        public int Payload;
        public Mode Mode;
        public string ModeName;
        public int Window;
        public long TimeoutMs = 5000;
        public string JsonFile;
        public int Variant;              // index into Codec.LoadVariants
        public string VariantName;
        public int FramesPerStream = 16; // --mode stream
        public string Host;              // the host as given in --connect (opening handshakes)
    }

    /// <summary>Run-wide results shared by the connections.</summary>
    sealed class Shared
    {
        public readonly List<string> Details = new List<string>();
        public long GlobalIndex;          // duration mode: next global request index
        public long Progress;             // completions so far (watchdog)
        public long Errors;
        public Stopwatch Clock;

        public void Error(string detail)
        {
            Interlocked.Increment(ref Errors);
            lock (Details) { if (Details.Count < 10) Details.Add(detail); }
        }
    }

    /// <summary>Drives one connection: per-packet (window 1), pipelined (sliding window) or receive.</summary>
    sealed class Driver : IReplyVerifier
    {
        readonly LoadConfig _cfg;
        readonly Shared _shared;
        readonly int _id;
        readonly long _first, _quota;      // requests mode: global indices [_first, _first + _quota)
        long _issued;
        bool _stop;
        public RequestClient Client;
        public long Sent, Replies, Verified, VerifiedBytes, Unmatched, Streams;
        Socket _socket;                    // stream mode: driven directly
        public readonly LatencyHistogram Histogram = new LatencyHistogram();

        public Driver(LoadConfig cfg, Shared shared, int id, long first, long quota)
        {
            _cfg = cfg; _shared = shared; _id = id; _first = first; _quota = quota;
        }

        public void Connect()
        {
            var s = new Socket(_cfg.Endpoint.AddressFamily, SocketType.Stream, ProtocolType.Tcp);
            s.NoDelay = true; // STD-ECHO-6
            s.SendTimeout = (int)Math.Max(1000, _cfg.TimeoutMs);
            s.Connect(_cfg.Endpoint);
            if (_cfg.Mode == Mode.Stream) { _socket = s; return; }
            // Per-packet: resume the driver on the receive thread (no thread-pool hop per request);
            // safe because one request in flight cannot fill the socket buffers both ways. (Tried for
            // small pipelined windows too: slower, as the driver then writes once per reply.)
            bool inline = _cfg.Mode == Mode.PerPacket;
            try { Client = new RequestClient(s, _cfg.Codec, _cfg.TimeoutMs, this, inline, _cfg.Variant, _cfg.Host); }
            catch (Exception) { s.Close(); throw; }
        }

        /// <summary>Closes the connection now (watchdog, failed start).</summary>
        public void Abort()
        {
            if (Client != null) Client.Close();
            if (_socket != null) try { _socket.Close(); } catch (Exception) { }
        }

        bool More()
        {
            if (_stop) return false;
            if (_cfg.Requests >= 0) return _issued < _quota;
            return _shared.Clock.Elapsed.TotalSeconds < _cfg.Duration;
        }

        long NextIndex()
        {
            long i = _cfg.Requests >= 0 ? _first + _issued : Interlocked.Increment(ref _shared.GlobalIndex) - 1;
            _issued++;
            return i;
        }

        public async Task RunAsync()
        {
            await Task.Yield();
            if (_cfg.Mode == Mode.Stream)
            {
                try { RunStreams(); }
                catch (Exception e) { _shared.Error("connection " + _id + ": " + e.GetType().Name + ": " + e.Message); }
                try { _socket.Shutdown(SocketShutdown.Send); } catch (Exception) { }
                try { _socket.Close(); } catch (Exception) { }
                return;
            }
            try
            {
                if (_cfg.Mode == Mode.Receive) RunReceiveMode();
                else if (_cfg.Mode == Mode.Batched) await RunBatched();
                else await RunWindowed();
                await Task.Yield(); // leave the receive thread (inline completions) before closing
            }
            catch (Exception e)
            {
                _shared.Error("connection " + _id + ": " + e.GetType().Name + ": " + e.Message);
            }
            // The protocol's closing handshake (websocket: close 1000; a server in --sink mode may
            // not answer it, which is no error), then half-close, let the server finish, then close
            // (bounded).
            if (!Client.Failed) Client.CloseHandshake((int)Math.Min(_cfg.TimeoutMs, 1000));
            Client.ShutdownSend();
            Client.WaitReceiver((int)Math.Min(_cfg.TimeoutMs, 5000));
            Client.Dispose();
        }

        async Task RunWindowed()
        {
            int w = _cfg.Window;
            var ring = new ValueTask<Completion>[w];
            var payload = new byte[_cfg.Payload];
            int head = 0, inflight = 0;
            while (true)
            {
                while (inflight < w && More())
                {
                    long idx = NextIndex();
                    _cfg.Codec.FillLoadPayload(_cfg.Variant, idx, payload);
                    ValueTask<Completion> t;
                    if (!Client.TryEnqueue(new RequestId(idx), payload, out t))
                    {
                        Completion r = t.IsCompleted ? t.Result : default(Completion); // recycles the source
                        _shared.Error("request " + idx + " refused (" + r.Kind + "): connection failed or window beyond the pending bound");
                        _stop = true;
                        break;
                    }
                    Sent++;
                    ring[(head + inflight) % w] = t;
                    inflight++;
                }
                if (!Client.Flush())
                {
                    if (!_stop) _shared.Error("connection " + _id + ": write failed");
                    _stop = true;
                }
                if (inflight == 0) break;
                Completion c = await ring[head];
                ring[head] = default(ValueTask<Completion>);
                head = (head + 1) % w;
                inflight--;
                Account(c);
                // Take every reply that is already in before refilling: one write for many requests.
                while (inflight > 0 && ring[head].IsCompleted)
                {
                    c = ring[head].Result;
                    ring[head] = default(ValueTask<Completion>);
                    head = (head + 1) % w;
                    inflight--;
                    Account(c);
                }
            }
        }

        /// <summary>--mode batched: write a batch of --batch requests at once, wait for all of their
        /// replies (each verified), then the next batch; a batch not complete within the timeout stops
        /// the connection.</summary>
        async Task RunBatched()
        {
            int n = _cfg.Window;
            var tasks = new ValueTask<Completion>[n];
            var payload = new byte[_cfg.Payload];
            while (!_stop && More())
            {
                int k = 0;
                while (k < n && More())
                {
                    long idx = NextIndex();
                    _cfg.Codec.FillLoadPayload(_cfg.Variant, idx, payload);
                    ValueTask<Completion> t;
                    if (!Client.TryEnqueue(new RequestId(idx), payload, out t))
                    {
                        Completion r = t.IsCompleted ? t.Result : default(Completion);
                        _shared.Error("request " + idx + " refused (" + r.Kind + "): connection failed");
                        _stop = true;
                        break;
                    }
                    Sent++;
                    tasks[k++] = t;
                }
                if (!Client.Flush())
                {
                    if (!_stop) _shared.Error("connection " + _id + ": write failed");
                    _stop = true;
                }
                for (int i = 0; i < k; i++)
                {
                    Completion c = await tasks[i];
                    tasks[i] = default(ValueTask<Completion>);
                    Account(c);
                    if (c.Kind != CompletionKind.Reply) _stop = true;   // the batch did not complete in time
                }
            }
        }

        void Account(Completion c)
        {
            Interlocked.Increment(ref _shared.Progress);
            switch (c.Kind)
            {
                case CompletionKind.Reply:
                    Replies++;
                    Histogram.Record(c.LatencyTicks * 1000000 / Stopwatch.Frequency);
                    if (c.Verified) { Verified++; VerifiedBytes += c.PayloadLength; }
                    else if (c.Rejected != null) _shared.Error("request " + c.Id + ": " + c.Rejected);
                    else _shared.Error("request " + c.Id + ": reply payload differs from the request (" + c.PayloadLength + " bytes)");
                    break;
                case CompletionKind.Timeout:
                    _shared.Error("request " + c.Id + ": no reply within " + _cfg.TimeoutMs + " ms");
                    break;
                default:
                    _shared.Error("request " + c.Id + ": " + c.Kind + " (connection " + _id + " failed)");
                    _stop = true;
                    break;
            }
        }

        void RunReceiveMode()
        {
            var payload = new byte[_cfg.Payload];
            int batch = Math.Max(1, _cfg.Window);
            while (More())
            {
                int n = 0;
                while (n < batch && Client.BufferedBytes < 256 * 1024 && More())
                {
                    long idx = NextIndex();
                    _cfg.Codec.FillLoadPayload(_cfg.Variant, idx, payload);
                    if (!Client.EnqueueUnmatched(payload)) { _shared.Error("encoder refused a payload of " + payload.Length + " bytes"); _stop = true; break; }
                    n++;
                }
                if (!Client.Flush()) { _shared.Error("connection " + _id + ": write failed"); _stop = true; break; }
                Sent += n;
                VerifiedBytes += (long)n * _cfg.Payload;
                Interlocked.Add(ref _shared.Progress, n);
            }
        }

        /// <summary>--mode stream: streams one after another on a blocking socket: open, wait for the
        /// ack, DATA frames with at most --window unanswered (each echo verified: same stream id,
        /// payload equal, in order), end, wait for the end. --requests counts streams.</summary>
        void RunStreams()
        {
            StreamClient sc = _cfg.Codec.NewStreamClient(_cfg.Variant);
            var output = new SendBuffer();
            var rx = new byte[64 * 1024];
            var payload = new byte[_cfg.Payload];
            int f = _cfg.FramesPerStream, w = _cfg.Window;
            var sentAt = new long[w];
            var indices = new long[w];
            _socket.ReceiveTimeout = (int)Math.Min(_cfg.TimeoutMs, int.MaxValue);
            try
            {
                while (More())
                {
                    long first = NextIndex() * f;   // DATA payload indices of this stream
                    long sid = sc.Open(output);
                    Send(output);
                    StreamEventKind kind; long id; byte[] echo;
                    Next(sc, rx, out kind, out id, out echo);
                    if (kind != StreamEventKind.Ack || id != sid)
                    {
                        _shared.Error("connection " + _id + ": stream " + sid + ": expected the open's ack with its id, got " + kind + " id " + id);
                        return;
                    }
                    int sent = 0, head = 0, inflight = 0;
                    bool ok = true;
                    while (sent < f || inflight > 0)
                    {
                        while (sent < f && inflight < w)
                        {
                            long idx = first + sent;
                            _cfg.Codec.FillLoadPayload(_cfg.Variant, idx, payload);
                            if (!sc.Data(sid, payload, output)) { _shared.Error("encoder refused a payload of " + payload.Length + " bytes"); return; }
                            int slot = (head + inflight) % w;
                            sentAt[slot] = Stopwatch.GetTimestamp();
                            indices[slot] = idx;
                            inflight++;
                            sent++;
                            Sent++;
                        }
                        Send(output);
                        Next(sc, rx, out kind, out id, out echo);
                        if (kind != StreamEventKind.Data)
                        {
                            _shared.Error("connection " + _id + ": stream " + sid + ": expected a DATA echo, got " + kind + " id " + id);
                            return;
                        }
                        Replies++;
                        Histogram.Record((Stopwatch.GetTimestamp() - sentAt[head]) * 1000000 / Stopwatch.Frequency);
                        long expect = indices[head];
                        head = (head + 1) % w;
                        inflight--;
                        Interlocked.Increment(ref _shared.Progress);
                        if (id == sid && _cfg.Codec.VerifyLoadPayload(_cfg.Variant, expect, _cfg.Payload, echo)) { Verified++; VerifiedBytes += echo.Length; }
                        else
                        {
                            ok = false;
                            _shared.Error("connection " + _id + ": stream " + sid + ": DATA echo differs (id " + id + ", " + echo.Length + " bytes)");
                        }
                    }
                    sc.End(sid, output);
                    Send(output);
                    Next(sc, rx, out kind, out id, out echo);
                    if (kind != StreamEventKind.End || id != sid)
                    {
                        _shared.Error("connection " + _id + ": stream " + sid + ": expected the end with its id, got " + kind + " id " + id);
                        return;
                    }
                    if (ok) Streams++;
                }
            }
            catch (SocketException e)
            {
                _shared.Error("connection " + _id + ": " + (e.SocketErrorCode == SocketError.TimedOut ? "no answer within " + _cfg.TimeoutMs + " ms" : e.Message));
            }
            finally
            {
                sc.Dispose();
                output.Dispose();
            }
        }

        void Send(SendBuffer output)
        {
            int off = 0, len = output.Length;
            while (off < len)
            {
                int n = _socket.Send(output.Buffer, off, len - off, SocketFlags.None);
                if (n <= 0) throw new SocketException((int)SocketError.ConnectionReset);
                off += n;
            }
            output.Clear();
        }

        /// <summary>The next frame from the server (reads until one is there; bounded by the receive timeout).</summary>
        void Next(StreamClient sc, byte[] rx, out StreamEventKind kind, out long id, out byte[] payload)
        {
            while (!sc.TryTake(out kind, out id, out payload))
            {
                int n = _socket.Receive(rx, 0, rx.Length, SocketFlags.None);
                if (n <= 0) throw new InvalidOperationException("the server closed the connection");
                if (!sc.Feed(new ReadOnlySpan<byte>(rx, 0, n))) throw new InvalidOperationException("reply stream rejected: " + sc.Error);
            }
        }

        // IReplyVerifier (receive thread).
        public bool Verify(RequestId id, ReadOnlySpan<byte> payload)
        {
            if (_cfg.Mode == Mode.Receive) return false;
            return _cfg.Codec.VerifyLoadPayload(_cfg.Variant, id.Value, _cfg.Payload, payload);
        }

        public void OnUnmatched(byte flag, byte sequence, ReadOnlySpan<byte> payload)
        {
            // rpc: RPC-MATCH-2; but in receive mode no request is pending, and every reply is one the client
            // did not ask for: an error (spec/harness.md HAR-VERIFY-3)
            if (!_cfg.Codec.UnmatchedIsLoadError && _cfg.Mode != Mode.Receive) return;
            Unmatched++;
            _shared.Error("connection " + _id + ": unmatched reply (flag 0x" + flag.ToString("X2") + ", seq " + sequence + ", " + payload.Length + " bytes)");
        }

        public void OnProtocolError(ProtocolError error)
        {
            _shared.Error("connection " + _id + ": reply stream rejected: " + error);
        }
    }

    public static class Program
    {
        const string Usage = "usage: fp-load (--codec JSON | --protocol NAME) --connect HOST:PORT [--connections N] (--requests N | --duration SECONDS) [--payload BYTES] [--mode per-packet|pipelined|batched|receive|stream] [--window W] [--batch N] [--variant NAME] [--frames-per-stream F] [--timeout-ms MS] [--json FILE]";

        public static int Main(string[] args)
        {
            if (Options.WantsHelp(args)) { Console.Out.WriteLine(Usage); return 0; }
            LoadConfig cfg;
            try { cfg = Parse(args); }
            catch (Exception e)
            {
                return Options.UsageError(e, Usage);
            }
            int rc;
            try { rc = Run(cfg); }
            catch (Exception e)
            {
                Console.Error.WriteLine("fp-load: " + e.Message);
                rc = 1;
            }
            return ProcessExit.Quit(rc);
        }

        static LoadConfig Parse(string[] args)
        {
            var o = new Options(args, new string[0], new[] { "codec", "protocol", "connect", "connections", "requests", "duration",
                "payload", "mode", "window", "timeout-ms", "json", "variant", "frames-per-stream", "batch" });
            var c = new LoadConfig();
            c.Codec = o.CreateCodec();
            string connect = o.Require("connect");
            c.Endpoint = Options.ParseEndPoint(connect);
            c.Host = connect.Substring(0, connect.LastIndexOf(':')).Trim('[', ']');
            string[] variants = c.Codec.LoadVariants;
            c.VariantName = o.Get("variant", variants[0]);
            c.Variant = Array.IndexOf(variants, c.VariantName);
            if (c.Variant < 0) throw new UsageException("--variant " + c.VariantName + ": " + c.Codec.Protocol + " has the variants " + string.Join(", ", variants));
            c.Connections = (int)Math.Min(o.GetLong("connections", 1), int.MaxValue);
            if (c.Connections < 1) throw new UsageException("--connections must be at least 1");
            if (o.Has("requests") == o.Has("duration")) throw new UsageException("give exactly one of --requests and --duration");
            if (o.Has("requests")) { c.Requests = o.GetLong("requests", 0); if (c.Requests < 0) throw new UsageException("--requests must be at least 0"); }
            else { c.Duration = o.GetDouble("duration", 0); if (!(c.Duration > 0)) throw new UsageException("--duration must be > 0"); }
            long p = o.GetLong("payload", 32);
            if (p < 0) throw new UsageException("--payload must be at least 0");
            c.Payload = (int)Math.Min(p, int.MaxValue);
            c.ModeName = o.Get("mode", "per-packet");
            if (c.ModeName == "per-packet") c.Mode = Mode.PerPacket;
            else if (c.ModeName == "pipelined") c.Mode = Mode.Pipelined;
            else if (c.ModeName == "receive") c.Mode = Mode.Receive;
            else if (c.ModeName == "stream") c.Mode = Mode.Stream;
            else if (c.ModeName == "batched") c.Mode = Mode.Batched;
            else throw new UsageException("unknown --mode '" + c.ModeName + "' (per-packet|pipelined|batched|receive|stream)");
            if (o.Has("batch") && c.Mode != Mode.Batched) throw new UsageException("--batch applies to --mode batched only");
            if (c.Mode == Mode.Batched)
            {
                if (o.Has("window")) throw new UsageException("--window does not apply to --mode batched (use --batch)");
                long batch = o.GetLong("batch", c.Codec.DefaultBatch);
                if (batch < 1) throw new UsageException("--batch must be at least 1");
                if (batch > c.Codec.MaxInFlight) throw new UsageException("--batch must be at most " + c.Codec.MaxInFlight + " for " + c.Codec.Protocol);
            }
            if (c.Mode == Mode.Stream)
            {
                StreamClient sc = c.Codec.NewStreamClient(c.Variant);
                if (sc == null) throw new UsageException("--mode stream: " + c.Codec.Protocol + " has no streams");
                sc.Dispose();
            }
            long fps = o.GetLong("frames-per-stream", 16);
            if (fps < 1 || fps > int.MaxValue) throw new UsageException("--frames-per-stream must be at least 1");
            if (o.Has("frames-per-stream") && c.Mode != Mode.Stream) throw new UsageException("--frames-per-stream applies to --mode stream only");
            c.FramesPerStream = (int)fps;
            long window = c.Mode == Mode.Batched ? o.GetLong("batch", c.Codec.DefaultBatch)
                : o.GetLong("window", c.Mode == Mode.PerPacket || c.Mode == Mode.Stream ? 1 : c.Mode == Mode.Pipelined ? 32 : 256);
            if (c.Mode == Mode.PerPacket && window != 1) throw new UsageException("--window must be 1 in per-packet mode");
            if (window < 1) throw new UsageException("--window must be at least 1");
            if (c.Mode == Mode.Pipelined && window > c.Codec.MaxInFlight)
                throw new UsageException("--window must be at most " + c.Codec.MaxInFlight + " for " + c.Codec.Protocol);
            c.Window = (int)Math.Min(window, 1 << 20);
            c.TimeoutMs = o.GetLong("timeout-ms", 5000);
            if (c.TimeoutMs <= 0) throw new UsageException("--timeout-ms must be > 0");
            c.JsonFile = o.Get("json", null);
            ProtocolError err;
            if (!c.Codec.CheckPayload(c.Payload, out err)) throw new UsageException("--payload " + c.Payload + " cannot be encoded: " + err);
            return c;
        }

        static int Run(LoadConfig cfg)
        {
            int w, io;
            ThreadPool.GetMinThreads(out w, out io);
            ThreadPool.SetMinThreads(Math.Max(w, Math.Min(256, cfg.Connections + 4)), io);

            var shared = new Shared();
            var drivers = new Driver[cfg.Connections];
            long first = 0;
            for (int i = 0; i < cfg.Connections; i++)
            {
                long quota = cfg.Requests >= 0 ? cfg.Requests / cfg.Connections + (i < cfg.Requests % cfg.Connections ? 1 : 0) : -1;
                drivers[i] = new Driver(cfg, shared, i, first, quota);
                if (quota > 0) first += quota;
            }
            bool connected = true;
            for (int i = 0; i < drivers.Length && connected; i++)
            {
                try { drivers[i].Connect(); }
                catch (Exception e)
                {
                    // Still write the report (all keys), with the error, and exit 1.
                    shared.Error("connect " + cfg.Endpoint + " (connection " + i + "): " + e.Message);
                    connected = false;
                }
            }
            if (!connected)
            {
                foreach (Driver d in drivers) { if (d.Client != null) d.Client.Dispose(); else d.Abort(); }
                drivers = new Driver[0];
            }

            shared.Clock = Stopwatch.StartNew();
            var tasks = new Task[drivers.Length];
            for (int i = 0; i < drivers.Length; i++) tasks[i] = drivers[i].RunAsync();

            // Watchdog: every request completes within the timeout, so no progress for
            // 2 × timeout + 5 s means something is stuck; close everything (bounded in time).
            long lastProgress = -1;
            long stallMs = 2 * cfg.TimeoutMs + 5000;
            Stopwatch sinceProgress = Stopwatch.StartNew();
            bool aborted = false;
            while (!Task.WaitAll(tasks, 200))
            {
                long p = Interlocked.Read(ref shared.Progress);
                if (p != lastProgress) { lastProgress = p; sinceProgress.Restart(); continue; }
                if (sinceProgress.ElapsedMilliseconds > stallMs)
                {
                    if (aborted) break;
                    shared.Error("no progress for " + stallMs + " ms: aborting");
                    foreach (Driver d in drivers) d.Abort();
                    aborted = true;
                    sinceProgress.Restart();
                }
            }
            shared.Clock.Stop();
            double seconds = Math.Max(shared.Clock.Elapsed.TotalSeconds, 1e-9);

            long sent = 0, replies = 0, verified = 0, bytes = 0, streams = 0;
            var hist = new LatencyHistogram();
            foreach (Driver d in drivers)
            {
                sent += d.Sent; replies += d.Replies + d.Unmatched; verified += d.Verified; bytes += d.VerifiedBytes;
                streams += d.Streams;
                hist.Add(d.Histogram);
            }
            long errors = Interlocked.Read(ref shared.Errors);
            bool receive = cfg.Mode == Mode.Receive;
            bool streamMode = cfg.Mode == Mode.Stream;
            double msgs = (receive ? sent : verified) / seconds;
            double mb = bytes / 1e6 / seconds;
            double streamsPerS = streams / seconds;
            bool success = errors == 0 && (receive || verified == sent)
                && (cfg.Requests < 0 || (streamMode ? streams == cfg.Requests : sent == cfg.Requests));

            var inv = CultureInfo.InvariantCulture;
            Console.Out.WriteLine(string.Format(inv,
                "fp-load (csharp): {0} {1} ({17}), {2} connections, window {3}, payload {4} B\n" +
                "  sent {5}, replies {6}, verified {7}, errors {8}\n" +
                "  {9:F3} s, {10:F1} msg/s, {11:F2} MB/s\n" +
                "  latency us: p50 {12} p90 {13} p99 {14} p99.9 {15} max {16}" + (streamMode ? "\n  streams completed {18}, {19:F1} streams/s" : ""),
                cfg.Codec.Protocol, cfg.ModeName, cfg.Connections, cfg.Window, cfg.Payload,
                sent, replies, verified, errors, seconds, msgs, mb,
                hist.Percentile(0.5), hist.Percentile(0.9), hist.Percentile(0.99), hist.Percentile(0.999), hist.Max,
                cfg.VariantName, streams, streamsPerS));
            lock (shared.Details)
            {
                foreach (string d in shared.Details) Console.Out.WriteLine("  error: " + d);
            }

            if (cfg.JsonFile != null)
            {
                var sb = new StringBuilder();
                sb.Append("{\"implementation\": \"csharp\", \"protocol\": ").Append(CodecJson.Quote(cfg.Codec.Protocol));
                sb.Append(", \"codec\": ").Append(cfg.Codec.Spec.Json);
                sb.Append(", \"mode\": ").Append(CodecJson.Quote(cfg.ModeName));
                sb.Append(", \"variant\": ").Append(CodecJson.Quote(cfg.VariantName));
                sb.AppendFormat(inv, ", \"connections\": {0}, \"window\": {1}, \"payload\": {2}", cfg.Connections, cfg.Window, cfg.Payload);
                sb.AppendFormat(inv, ", \"requests_sent\": {0}, \"replies_received\": {1}, \"replies_verified\": {2}, \"errors\": {3}", sent, replies, verified, errors);
                sb.Append(", \"error_details\": [");
                lock (shared.Details)
                {
                    for (int i = 0; i < shared.Details.Count; i++) sb.Append(i > 0 ? ", " : "").Append(CodecJson.Quote(shared.Details[i]));
                }
                sb.Append(']');
                sb.AppendFormat(inv, ", \"duration_s\": {0:F6}, \"msgs_per_s\": {1:F1}, \"mb_per_s\": {2:F3}", seconds, msgs, mb);
                sb.AppendFormat(inv, ", \"streams_completed\": {0}, \"streams_per_s\": {1:F1}", streams, streamsPerS);
                sb.AppendFormat(inv, ", \"latency_us\": {{\"p50\": {0}, \"p90\": {1}, \"p99\": {2}, \"p999\": {3}, \"max\": {4}}}}}",
                    hist.Percentile(0.5), hist.Percentile(0.9), hist.Percentile(0.99), hist.Percentile(0.999), hist.Max);
                File.WriteAllText(cfg.JsonFile, sb.ToString() + "\n");
            }
            return success ? 0 : 1;
        }
    }
}
