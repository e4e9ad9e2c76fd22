using System;
using System.Buffers;
using System.Collections.Generic;
using System.Net;
using System.Net.Sockets;
using System.Threading;
using Frameproof.Codec;

namespace Frameproof.Server
{
    sealed class ServerConfig
    {
        public FrameCodec Codec;
        public bool Sink;
        public bool Blocking = true;   // --io blocking (default) | saea
    }

    sealed class Counters
    {
        public long Connections, Frames, Bytes, ProtocolErrors;

        /// <summary>Adds what a session counted since the last call (reported = the session's totals
        /// already added).</summary>
        public void Add(ServerSession s, ref long reportedFrames, ref long reportedBytes)
        {
            long f = s.Frames, b = s.PayloadBytes;
            if (f != reportedFrames) { Interlocked.Add(ref Frames, f - reportedFrames); reportedFrames = f; }
            if (b != reportedBytes) { Interlocked.Add(ref Bytes, b - reportedBytes); reportedBytes = b; }
        }
    }

    interface IConnection
    {
        void Start();
        void Close();
    }

    /// <summary>
    /// One connection served by a dedicated thread with blocking socket calls around the protocol's
    /// server session: receive → session → send its output → receive. On Mono this has much lower
    /// per-request latency than SocketAsyncEventArgs (no I/O-thread hand-off); buffering is bounded
    /// the same way (one read, the decoder's partial frame, the replies to one read). --io blocking.
    /// </summary>
    sealed class BlockingConnection : IConnection
    {
        const int ReadSize = 64 * 1024;
        readonly EchoServer _server;
        readonly Socket _socket;
        readonly ServerSession _session;
        readonly byte[] _rx = new byte[ReadSize];
        long _reportedFrames, _reportedBytes;
        int _closed;

        public BlockingConnection(EchoServer server, Socket socket, ServerConfig cfg)
        {
            _server = server;
            _socket = socket;
            _session = cfg.Codec.NewSession(cfg.Sink);
        }

        public void Start()
        {
            var t = new Thread(Run, 256 * 1024) { IsBackground = true, Name = "fp-conn" };
            t.Start();
        }

        void Run()
        {
            try
            {
                while (!_session.Closed)
                {
                    int n = _socket.Receive(_rx, 0, ReadSize, SocketFlags.None);
                    if (n <= 0) _session.EndOfInput(); // half-close: the replies owed, then close
                    else _session.Receive(new ReadOnlySpan<byte>(_rx, 0, n));
                    Account();
                    SendOutput();
                    if (n <= 0) break;
                }
                if (_session.Error.IsSet) Interlocked.Increment(ref _server.Counters.ProtocolErrors);
                try { _socket.Shutdown(SocketShutdown.Send); } catch (Exception) { }
                // STD-ECHO-4 / LF-ECHO-2 after an error: read until the peer closes (bounded), so that
                // the close does not reset the replies in flight away.
                EchoServer.Drain(_socket, _rx);
            }
            catch (Exception) { }
            finally
            {
                Close();
                _session.Dispose();
            }
        }

        void SendOutput()
        {
            int len = _session.OutputLength, off = 0;
            byte[] buf = _session.OutputBuffer;
            while (off < len)
            {
                int m = _socket.Send(buf, off, len - off, SocketFlags.None);
                if (m <= 0) throw new SocketException((int)SocketError.ConnectionReset);
                off += m;
            }
            _session.ClearOutput();
        }

        void Account()
        {
            lock (this) _server.Counters.Add(_session, ref _reportedFrames, ref _reportedBytes);
        }

        public void Close()
        {
            if (Interlocked.Exchange(ref _closed, 1) != 0) return;
            Account();
            try { _socket.Close(); } catch (Exception) { }
            _server.Remove(this);
        }
    }

    /// <summary>
    /// One connection driven by SocketAsyncEventArgs around the protocol's server session, in a
    /// strict receive → session → send its output → receive cycle, so the bytes buffered per
    /// connection stay bounded (STD-LIM-3): one 64 KiB read buffer, the decoder's partial frame, and
    /// the replies to one read (at most one read plus one maximum frame). --io saea.
    /// </summary>
    sealed class Connection : IConnection
    {
        enum Phase { Receive, Send, Drain, Close }
        const int ReadSize = 64 * 1024;

        readonly EchoServer _server;
        readonly Socket _socket;
        readonly ServerSession _session;
        readonly SocketAsyncEventArgs _rx = new SocketAsyncEventArgs();
        readonly SocketAsyncEventArgs _tx = new SocketAsyncEventArgs();
        readonly byte[] _rxBuf;
        int _outSent;
        Phase _phase = Phase.Receive;
        bool _drainAfterSend;   // the session closed: half-close, then discard input until EOF (bounded)
        bool _eof;              // the peer half-closed: close once the output is sent
        int _drained;
        int _closed;
        Timer _drainTimer;
        long _reportedFrames, _reportedBytes;

        public Connection(EchoServer server, Socket socket, ServerConfig cfg)
        {
            _server = server;
            _socket = socket;
            _session = cfg.Codec.NewSession(cfg.Sink);
            _rxBuf = ArrayPool<byte>.Shared.Rent(ReadSize);
            _rx.SetBuffer(_rxBuf, 0, ReadSize);
            _rx.Completed += OnIo;
            _tx.Completed += OnIo;
        }

        public void Start() { Run(); }

        void OnIo(object sender, SocketAsyncEventArgs e)
        {
            try
            {
                if (e == _rx) AfterReceive(); else AfterSend();
            }
            catch (Exception)
            {
                _phase = Phase.Close; // e.g. the socket was closed by shutdown meanwhile
            }
            Run();
        }

        /// <summary>Issues I/O until an operation goes pending (loop, not recursion, for sync completions).</summary>
        void Run()
        {
            try
            {
                while (true)
                {
                    switch (_phase)
                    {
                        case Phase.Receive:
                        case Phase.Drain:
                            _rx.SetBuffer(_rxBuf, 0, ReadSize);
                            if (_socket.ReceiveAsync(_rx)) return;
                            AfterReceive();
                            break;
                        case Phase.Send:
                            _tx.SetBuffer(_session.OutputBuffer, _outSent, _session.OutputLength - _outSent);
                            if (_socket.SendAsync(_tx)) return;
                            AfterSend();
                            break;
                        default:
                            Close();
                            return;
                    }
                }
            }
            catch (Exception)
            {
                _phase = Phase.Close;
                Close();
            }
        }

        void AfterReceive()
        {
            if (_rx.SocketError != SocketError.Success) { _phase = Phase.Close; return; }
            int n = _rx.BytesTransferred;
            if (_phase == Phase.Drain)
            {
                _drained += n;
                if (n == 0 || _drained > EchoServer.DrainLimit) _phase = Phase.Close;
                return;
            }
            if (n == 0)
            {
                _eof = true;
                _session.EndOfInput();
            }
            else _session.Receive(new ReadOnlySpan<byte>(_rxBuf, 0, n));
            Account();
            if (_session.Closed)
            {
                if (_session.Error.IsSet) Interlocked.Increment(ref _server.Counters.ProtocolErrors);
                // At EOF the peer has closed its side: nothing to drain. After an error, drain.
                if (!_eof) _drainAfterSend = true;
            }
            if (_session.OutputLength > 0) _phase = Phase.Send;
            else AfterRepliesSent();
        }

        void Account()
        {
            lock (this) _server.Counters.Add(_session, ref _reportedFrames, ref _reportedBytes);
        }

        void AfterSend()
        {
            if (_tx.SocketError != SocketError.Success || _tx.BytesTransferred <= 0) { _phase = Phase.Close; return; }
            _outSent += _tx.BytesTransferred;
            if (_outSent < _session.OutputLength) return; // partial send: continue
            _outSent = 0;
            _session.ClearOutput();
            AfterRepliesSent();
        }

        void AfterRepliesSent()
        {
            if (_drainAfterSend)
            {
                _drainAfterSend = false;
                try { _socket.Shutdown(SocketShutdown.Send); } catch (Exception) { }
                _phase = Phase.Drain;
                // Reading until the peer's EOF avoids a reset that could destroy the replies in flight.
                _drainTimer = new Timer(DrainTimeout, null, EchoServer.DrainMs, Timeout.Infinite);
                return;
            }
            _phase = _session.Closed || _eof ? Phase.Close : Phase.Receive;
        }

        void DrainTimeout(object _) { Close(); }

        public void Close()
        {
            if (Interlocked.Exchange(ref _closed, 1) != 0) return;
            Account();
            if (_drainTimer != null) _drainTimer.Dispose();
            try { _socket.Shutdown(SocketShutdown.Both); } catch (Exception) { }
            try { _socket.Close(); } catch (Exception) { }
            _server.Remove(this);
            // Neither the read buffer nor the session is given back to the pool: a pending SAEA
            // operation or a concurrent Receive (shutdown path) may still use them; the GC reclaims them.
        }
    }

    sealed class EchoServer
    {
        /// <summary>After the session closed: discard at most this much input, for at most DrainMs.</summary>
        public const int DrainLimit = 4 * 1024 * 1024;
        public const int DrainMs = 2000;

        /// <summary>Reads (and discards) until the peer closes, bounded by DrainLimit and DrainMs.</summary>
        public static void Drain(Socket s, byte[] buf)
        {
            s.ReceiveTimeout = DrainMs;
            int drained = 0;
            while (drained < DrainLimit)
            {
                int m = s.Receive(buf, 0, buf.Length, SocketFlags.None);
                if (m <= 0) break;
                drained += m;
            }
        }

        public readonly Counters Counters = new Counters();
        readonly ServerConfig _cfg;
        readonly Socket _listener;
        readonly HashSet<IConnection> _conns = new HashSet<IConnection>();
        volatile bool _stopping;

        public EchoServer(ServerConfig cfg, IPEndPoint ep)
        {
            _cfg = cfg;
            _listener = new Socket(ep.AddressFamily, SocketType.Stream, ProtocolType.Tcp);
            _listener.SetSocketOption(SocketOptionLevel.Socket, SocketOptionName.ReuseAddress, true);
            _listener.Bind(ep);
            _listener.Listen(1024);
        }

        public IPEndPoint LocalEndPoint { get { return (IPEndPoint)_listener.LocalEndPoint; } }

        public void StartAccepting()
        {
            var t = new Thread(AcceptLoop) { IsBackground = true, Name = "fp-accept" };
            t.Start();
        }

        void AcceptLoop()
        {
            while (!_stopping)
            {
                Socket s;
                try { s = _listener.Accept(); }
                catch (Exception) { if (_stopping) return; Thread.Sleep(10); continue; }
                try
                {
                    s.NoDelay = true; // STD-ECHO-6
                    IConnection c = _cfg.Blocking ? (IConnection)new BlockingConnection(this, s, _cfg) : new Connection(this, s, _cfg);
                    lock (_conns)
                    {
                        if (_stopping) { s.Close(); return; }
                        _conns.Add(c);
                    }
                    Interlocked.Increment(ref Counters.Connections);
                    c.Start();
                }
                catch (Exception e)
                {
                    Console.Error.WriteLine("fp-server: accept: " + e.Message);
                    try { s.Close(); } catch (Exception) { }
                }
            }
        }

        public void Remove(IConnection c)
        {
            lock (_conns) _conns.Remove(c);
        }

        public void Stop()
        {
            _stopping = true;
            try { _listener.Close(); } catch (Exception) { }
            IConnection[] all;
            lock (_conns) { all = new IConnection[_conns.Count]; _conns.CopyTo(all); }
            foreach (IConnection c in all) c.Close();
        }
    }

    public static class Program
    {
        const string Usage = "usage: fp-server (--codec JSON | --protocol NAME) --listen HOST:PORT [--sink] [--threads N] [--io blocking|saea]";

        public static int Main(string[] args)
        {
            AppDomain.CurrentDomain.UnhandledException += (s, e) =>
                Console.Error.WriteLine("fp-server: unhandled exception: " + e.ExceptionObject);
            if (Options.WantsHelp(args)) { Console.Out.WriteLine(Usage); return 0; }
            ServerConfig cfg = new ServerConfig();
            IPEndPoint ep;
            try
            {
                var o = new Options(args, new[] { "sink" }, new[] { "codec", "protocol", "listen", "threads", "io" });
                cfg.Codec = o.CreateCodec(); // a bad configuration (e.g. LF-FMT-3) is refused before any byte
                ep = Options.ParseEndPoint(o.Require("listen"));
                cfg.Sink = o.Flag("sink");
                string ioMode = o.Get("io", "blocking");
                if (ioMode != "blocking" && ioMode != "saea") throw new UsageException("--io must be blocking or saea");
                cfg.Blocking = ioMode == "blocking";
                long threads = o.GetLong("threads", Environment.ProcessorCount);
                if (threads < 1 || threads > 4096) throw new UsageException("--threads must be between 1 and 4096");
                int w, io;
                ThreadPool.GetMinThreads(out w, out io);
                ThreadPool.SetMinThreads(Math.Max(w, (int)threads), Math.Max(io, (int)threads));
            }
            catch (Exception e)
            {
                return Options.UsageError(e, Usage);
            }

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
            Mono.Unix.UnixSignal.WaitAny((Mono.Unix.UnixSignal[])handle, -1);
#else
            var parts = (object[])handle;
            ((ManualResetEventSlim)parts[0]).Wait();
            GC.KeepAlive(parts[1]);
#endif
        }
    }
}
