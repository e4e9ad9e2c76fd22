using System;
using System.Buffers;
using System.Collections.Generic;
using System.Diagnostics;
using System.Net;
using System.Net.Sockets;
using System.Runtime.InteropServices;
using System.Threading;
using Frameproof.Codec;

namespace Frameproof.Server
{
    public static class Program
    {
        const string Usage = "usage: fp-server (--codec JSON | --protocol NAME) --listen HOST:PORT [--sink] [--threads N] [--io epoll|blocking|saea]"
            + " [--memory-budget BYTES] [--idle-timeout-ms MS] [--frame-timeout-ms MS] [--max-output-bytes BYTES]"
            + " [--write-timeout-ms MS] [--max-connections N]";

        static long Positive(Options o, string name, long def, long max)
        {
            long v = o.GetLong(name, def);
            if (v < 1 || v > max) throw new UsageException("--" + name + " must be a positive integer (at most " + max + ")");
            return v;
        }

        public static int Main(string[] args)
        {
            AppDomain.CurrentDomain.UnhandledException += (s, e) =>
                Console.Error.WriteLine("fp-server: unhandled exception: " + e.ExceptionObject);
            if (Options.WantsHelp(args)) { Console.Out.WriteLine(Usage); return 0; }
            ServerConfig cfg = new ServerConfig();
            IPEndPoint ep;
            try
            {
                var o = new Options(args, new[] { "sink" }, new[] { "codec", "protocol", "listen", "threads", "io",
                    "memory-budget", "idle-timeout-ms", "frame-timeout-ms", "max-output-bytes", "write-timeout-ms", "max-connections" });
                cfg.Codec = o.CreateCodec(); // a bad configuration (e.g. LF-FMT-3) is refused before any byte
                ep = Options.ParseEndPoint(o.Require("listen"));
                cfg.Sink = o.Flag("sink");
                cfg.Io = o.Get("io", cfg.Io);
                if (cfg.Io != "blocking" && cfg.Io != "saea" && cfg.Io != "epoll") throw new UsageException("--io must be blocking, saea or epoll");
                if (cfg.Io == "epoll" && Environment.OSVersion.Platform != PlatformID.Unix)
                    throw new UsageException("--io epoll needs Linux");
                long threads = o.GetLong("threads", Environment.ProcessorCount);
                if (threads < 1 || threads > 4096) throw new UsageException("--threads must be between 1 and 4096");
                cfg.Threads = (int)threads;
                ResourceLimits lim = cfg.Limits;
                lim.MemoryBudget = Positive(o, "memory-budget", lim.MemoryBudget, long.MaxValue);
                lim.IdleTimeoutMs = Positive(o, "idle-timeout-ms", lim.IdleTimeoutMs, int.MaxValue);
                lim.FrameTimeoutMs = Positive(o, "frame-timeout-ms", lim.FrameTimeoutMs, int.MaxValue);
                lim.MaxOutputBytes = Positive(o, "max-output-bytes", lim.MaxOutputBytes, long.MaxValue);
                lim.WriteTimeoutMs = Positive(o, "write-timeout-ms", lim.WriteTimeoutMs, int.MaxValue);
                lim.MaxConnections = (int)Positive(o, "max-connections", lim.MaxConnections, 1000000);
                if (lim.MemoryBudget < cfg.Codec.LargestInput)
                    throw new UsageException("--memory-budget " + lim.MemoryBudget + " is below the largest frame the server accepts ("
                        + cfg.Codec.LargestInput + " bytes)");
                int w, io;
                ThreadPool.GetMinThreads(out w, out io);
                ThreadPool.SetMinThreads(Math.Max(w, (int)threads), Math.Max(io, (int)threads));
            }
            catch (Exception e)
            {
                return Options.UsageError(e, Usage);
            }

            Descriptors.Raise(cfg.Limits.MaxConnections);
            EchoServer server;
            try { server = new EchoServer(cfg, ep); }
            catch (Exception e) { Console.Error.WriteLine("fp-server: cannot listen on " + ep + ": " + e.Message); return 1; }

            object signals = InstallSignals();
            IPEndPoint bound = server.LocalEndPoint;
            Console.Out.WriteLine("LISTENING " + (bound.Address.AddressFamily == AddressFamily.InterNetworkV6 ? "[" + bound.Address + "]" : bound.Address.ToString()) + ":" + bound.Port);
            Console.Out.Flush();
            server.StartAccepting();

            WaitForSignal(signals);

            server.Stop();
            Counters c = server.Counters;
            Console.Out.WriteLine("{\"connections\": " + Interlocked.Read(ref c.Connections) + ", \"frames\": " + Interlocked.Read(ref c.Frames)
                + ", \"bytes\": " + Interlocked.Read(ref c.Bytes) + ", \"protocol_errors\": " + Interlocked.Read(ref c.ProtocolErrors) + "}");
            Console.Out.Flush();
            Console.Error.WriteLine("fp-server: closed for the memory budget " + Interlocked.Read(ref c.ClosedBudget)
                + ", idle " + Interlocked.Read(ref c.ClosedIdle) + ", handshake " + Interlocked.Read(ref c.ClosedHandshake)
                + ", frame timeout " + Interlocked.Read(ref c.ClosedFrame) + ", write timeout " + Interlocked.Read(ref c.ClosedWrite)
                + "; refused at the connection limit " + Interlocked.Read(ref c.Refused) + "; failed accepts " + Interlocked.Read(ref c.AcceptErrors));
            Console.Error.Flush();
#if MONO
            // Everything is written and flushed: exit now. Mono's own shutdown after Main returns waited
            // 15 s and more for its thread pool with sockets in SocketAsyncEventArgs operations (NetTests,
            // the "saea" model, under load, 2026-11-27), long past the SIGTERM a runner gives a server.
            Mono.Unix.Native.Stdlib._Exit(0);
#endif
            return 0;
        }

        /// <summary>Installs the SIGINT/SIGTERM handlers; call before printing LISTENING, so that a
        /// signal sent right after that line cannot hit the default action (termination).</summary>
        static object InstallSignals()
        {
#if MONO
            return new Mono.Unix.UnixSignal[] {
                new Mono.Unix.UnixSignal(Mono.Unix.Native.Signum.SIGINT),
                new Mono.Unix.UnixSignal(Mono.Unix.Native.Signum.SIGTERM),
            };
#else
            var done = new ManualResetEventSlim(false);
            Console.CancelKeyPress += (s, e) => { e.Cancel = true; done.Set(); };
            var term = System.Runtime.InteropServices.PosixSignalRegistration.Create(
                System.Runtime.InteropServices.PosixSignal.SIGTERM, ctx => { ctx.Cancel = true; done.Set(); });
            return new object[] { done, term };
#endif
        }

        static void WaitForSignal(object handle)
        {
#if MONO
            // Not WaitAny(signals, -1) alone: a SIGTERM that arrived soon after LISTENING, before this
            // thread was waiting, was counted by the UnixSignal but never woke the wait (the server ran
            // until killed, its main thread in poll: NetTests, 2-3 runs in 4 with another process busy on
            // one core, 2026-11-24). So the counts are checked before each wait, and the wait times out.
            var signals = (Mono.Unix.UnixSignal[])handle;
            while (true)
            {
                foreach (Mono.Unix.UnixSignal s in signals) if (s.IsSet) return;
                Mono.Unix.UnixSignal.WaitAny(signals, 200);
            }
#else
            var parts = (object[])handle;
            ((ManualResetEventSlim)parts[0]).Wait();
            GC.KeepAlive(parts[1]);
#endif
        }
    }
}
