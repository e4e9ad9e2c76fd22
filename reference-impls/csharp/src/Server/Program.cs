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
        public Protocol Protocol;
        public LengthFieldProfile Profile = LengthFieldProfile.Default;
        public long MaxPayload;
        public bool Sink;
        public bool Blocking = true;   // --io blocking (default) | saea
    }

    sealed class Counters
    {
        public long Connections, Frames, Bytes, ProtocolErrors;
    }

    interface IConnection
    {
        void Start();
        void Close();
    }

    /// <summary>
    /// One connection served by a dedicated thread with blocking socket calls: receive → decode →
    /// send the replies → receive. On Mono this has much lower per-request latency than
    /// SocketAsyncEventArgs (no I/O-thread hand-off); buffering is bounded the same way (one read,
    /// the decoder's partial frame, the replies to one read). Used for --io blocking (default).
    /// </summary>
    sealed class BlockingConnection : IConnection, IFrameHandler
    {
        const int ReadSize = 64 * 1024;
        const int DrainLimit = 4 * 1024 * 1024;
        readonly EchoServer _server;
        readonly Socket _socket;
        readonly ServerConfig _cfg;
        readonly FrameDecoder _decoder;
        readonly byte[] _rx = new byte[ReadSize];
        byte[] _out = new byte[ReadSize + 64];
        int _outLen;
        long _frames, _bytes;
        int _closed;

        public BlockingConnection(EchoServer server, Socket socket, ServerConfig cfg)
        {
            _server = server;
            _socket = socket;
            _cfg = cfg;
            _decoder = cfg.Protocol == Protocol.Standard
                ? (FrameDecoder)new StandardDecoder(cfg.MaxPayload)
                : new LengthFieldDecoder(cfg.Profile, cfg.MaxPayload);
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
                while (true)
                {
                    int n = _socket.Receive(_rx, 0, ReadSize, SocketFlags.None);
                    if (n <= 0)
                    {
                        // Half-close: reply to every complete frame (already sent), discard a partial one.
                        if (!_decoder.Finish()) Interlocked.Increment(ref _server.Counters.ProtocolErrors);
                        try { _socket.Shutdown(SocketShutdown.Send); } catch (Exception) { }
                        break;
                    }
                    bool ok = _decoder.Feed(new ReadOnlySpan<byte>(_rx, 0, n), this);
                    Account();
                    SendReplies();
                    if (!ok)
                    {
                        // STD-ECHO-4 / LF-ECHO-2: the replies before the error are out; half-close and
                        // read until the peer closes (bounded), so the close does not reset them away.
                        Interlocked.Increment(ref _server.Counters.ProtocolErrors);
                        try { _socket.Shutdown(SocketShutdown.Send); } catch (Exception) { }
                        _socket.ReceiveTimeout = 2000;
                        int drained = 0;
                        while (drained < DrainLimit)
                        {
                            int m = _socket.Receive(_rx, 0, ReadSize, SocketFlags.None);
                            if (m <= 0) break;
                            drained += m;
                        }
                        break;
                    }
                }
            }
            catch (Exception) { }
            finally { Close(); }
        }

        void SendReplies()
        {
            int off = 0;
            while (off < _outLen)
            {
                int m = _socket.Send(_out, off, _outLen - off, SocketFlags.None);
                if (m <= 0) throw new SocketException((int)SocketError.ConnectionReset);
                off += m;
            }
            _outLen = 0;
            if (_out.Length > 1024 * 1024) _out = new byte[ReadSize + 64];
        }

        void Account()
        {
            if (_frames > 0) { Interlocked.Add(ref _server.Counters.Frames, _frames); _frames = 0; }
            if (_bytes > 0) { Interlocked.Add(ref _server.Counters.Bytes, _bytes); _bytes = 0; }
        }

        public void OnFrame(byte flag, byte sequence, ReadOnlySpan<byte> payload)
        {
            _frames++;
            _bytes += payload.Length;
            if (_cfg.Sink) return;
            EchoWriter.Append(_cfg, flag, sequence, payload, ref _out, ref _outLen);
        }

        public void Close()
        {
            if (Interlocked.Exchange(ref _closed, 1) != 0) return;
            Account();
            try { _socket.Close(); } catch (Exception) { }
            _server.Remove(this);
        }
    }

    /// <summary>Appends the echo reply of one frame to an output buffer (STD-ECHO-1/2, LF-ECHO-1).</summary>
    static class EchoWriter
    {
        public static void Append(ServerConfig cfg, byte flag, byte sequence, ReadOnlySpan<byte> payload, ref byte[] outBuf, ref int outLen)
        {
            int need;
            if (cfg.Protocol == Protocol.Standard)
            {
                if (!StandardFlags.IsRequest(flag)) return; // STD-ECHO-2: nothing for one-way or reply frames
                need = StandardEncoder.EncodedLength(payload.Length);
            }
            else need = (int)LengthFieldEncoder.EncodedLength(cfg.Profile, payload.Length);
            if (outLen + need > outBuf.Length)
            {
                var nb = new byte[Math.Max(outBuf.Length * 2, outLen + need)];
                Buffer.BlockCopy(outBuf, 0, nb, 0, outLen);
                outBuf = nb;
            }
            var dst = new Span<byte>(outBuf, outLen, need);
            outLen += cfg.Protocol == Protocol.Standard
                ? StandardEncoder.Write(StandardFlags.ReplyFor(flag), sequence, payload, dst)
                : LengthFieldEncoder.Write(cfg.Profile, payload, dst);
        }
    }

    /// <summary>
    /// One connection of the echo server, driven by SocketAsyncEventArgs in a strict
    /// receive → decode → send replies → receive cycle, so the bytes buffered per connection stay
    /// bounded (STD-LIM-3): one 64 KiB read buffer, the decoder's partial frame, and the replies to
    /// one read (at most one read plus one maximum frame).
    /// </summary>
    sealed class Connection : IConnection, IFrameHandler
    {
        enum Phase { Receive, Send, Drain, Close }
        const int ReadSize = 64 * 1024;
        const int DrainLimit = 4 * 1024 * 1024;

        readonly EchoServer _server;
        readonly Socket _socket;
        readonly ServerConfig _cfg;
        readonly FrameDecoder _decoder;
        readonly SocketAsyncEventArgs _rx = new SocketAsyncEventArgs();
        readonly SocketAsyncEventArgs _tx = new SocketAsyncEventArgs();
        readonly byte[] _rxBuf;
        byte[] _out;
        int _outLen, _outSent;
        Phase _phase = Phase.Receive;
        bool _closeAfterSend;   // decode error or EOF: close once the replies are out
        bool _drainAfterSend;   // decode error: half-close, then discard input until EOF (bounded)
        int _drained;
        int _closed;
        Timer _drainTimer;
        long _frames, _bytes;

        public Connection(EchoServer server, Socket socket, ServerConfig cfg)
        {
            _server = server;
            _socket = socket;
            _cfg = cfg;
            _decoder = cfg.Protocol == Protocol.Standard
                ? (FrameDecoder)new StandardDecoder(cfg.MaxPayload)
                : new LengthFieldDecoder(cfg.Profile, cfg.MaxPayload);
            _rxBuf = ArrayPool<byte>.Shared.Rent(ReadSize);
            _out = ArrayPool<byte>.Shared.Rent(ReadSize + 64);
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
                            _tx.SetBuffer(_out, _outSent, _outLen - _outSent);
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
                if (n == 0 || _drained > DrainLimit) _phase = Phase.Close;
                return;
            }
            if (n == 0)
            {
                // Half-close: reply to every complete frame (already queued), discard a partial one.
                if (!_decoder.Finish()) Interlocked.Increment(ref _server.Counters.ProtocolErrors);
                _closeAfterSend = true;
                _phase = _outLen > 0 ? Phase.Send : Phase.Close;
                Flush();
                return;
            }
            if (!_decoder.Feed(new ReadOnlySpan<byte>(_rxBuf, 0, n), this))
            {
                // STD-ECHO-4 / LF-ECHO-2: replies to the frames before the error, then close.
                Interlocked.Increment(ref _server.Counters.ProtocolErrors);
                _closeAfterSend = true;
                _drainAfterSend = true;
            }
            Flush();
            if (_outLen > 0) _phase = Phase.Send;
            else AfterRepliesSent();
        }

        void Flush()
        {
            if (_frames > 0) { Interlocked.Add(ref _server.Counters.Frames, _frames); _frames = 0; }
            if (_bytes > 0) { Interlocked.Add(ref _server.Counters.Bytes, _bytes); _bytes = 0; }
        }

        void AfterSend()
        {
            if (_tx.SocketError != SocketError.Success || _tx.BytesTransferred <= 0) { _phase = Phase.Close; return; }
            _outSent += _tx.BytesTransferred;
            if (_outSent < _outLen) return; // partial send: continue
            _outLen = 0;
            _outSent = 0;
            if (_out.Length > 1024 * 1024)
            {
                ArrayPool<byte>.Shared.Return(_out);
                _out = ArrayPool<byte>.Shared.Rent(ReadSize + 64);
            }
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
                _drainTimer = new Timer(DrainTimeout, null, 2000, Timeout.Infinite);
                return;
            }
            _phase = _closeAfterSend ? Phase.Close : Phase.Receive;
        }

        void DrainTimeout(object _) { Close(); }

        // Called by the decoder for every complete frame.
        public void OnFrame(byte flag, byte sequence, ReadOnlySpan<byte> payload)
        {
            _frames++;
            _bytes += payload.Length;
            if (_cfg.Sink) return;
            if (_cfg.Protocol == Protocol.Standard)
            {
                if (!StandardFlags.IsRequest(flag)) return; // STD-ECHO-2: no reply to one-way or reply frames
                int need = StandardEncoder.EncodedLength(payload.Length);
                Reserve(need);
                _outLen += StandardEncoder.Write(StandardFlags.ReplyFor(flag), sequence, payload, new Span<byte>(_out, _outLen, need));
            }
            else
            {
                int need = (int)LengthFieldEncoder.EncodedLength(_cfg.Profile, payload.Length);
                Reserve(need);
                _outLen += LengthFieldEncoder.Write(_cfg.Profile, payload, new Span<byte>(_out, _outLen, need));
            }
        }

        void Reserve(int need)
        {
            if (_outLen + need <= _out.Length) return;
            byte[] nb = ArrayPool<byte>.Shared.Rent(Math.Max(_out.Length * 2, _outLen + need));
            Buffer.BlockCopy(_out, 0, nb, 0, _outLen);
            ArrayPool<byte>.Shared.Return(_out);
            _out = nb;
        }

        public void Close()
        {
            if (Interlocked.Exchange(ref _closed, 1) != 0) return;
            Flush();
            if (_drainTimer != null) _drainTimer.Dispose();
            try { _socket.Shutdown(SocketShutdown.Both); } catch (Exception) { }
            try { _socket.Close(); } catch (Exception) { }
            _server.Remove(this);
            // Neither the buffers nor the decoder's are returned to the pool: a pending SAEA operation or
            // a concurrent Feed (shutdown path) may still hold them; the GC reclaims them.
        }
    }

    sealed class EchoServer
    {
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
        public static int Main(string[] args)
        {
            AppDomain.CurrentDomain.UnhandledException += (s, e) =>
                Console.Error.WriteLine("fp-server: unhandled exception: " + e.ExceptionObject);
            ServerConfig cfg = new ServerConfig();
            IPEndPoint ep;
            try
            {
                var o = new Options(args, new[] { "sink" });
                cfg.Protocol = Options.ParseProtocol(o.Require("protocol"));
                ep = Options.ParseEndPoint(o.Require("listen"));
                cfg.Profile = new LengthFieldProfile(o.GetLong("lf-offset", 0), (int)o.GetLong("lf-size", 2));
                if (cfg.Profile.Offset < 0 || cfg.Profile.Offset > 65536) throw new ArgumentException("--lf-offset must be between 0 and 65536");
                if (cfg.Protocol == Protocol.LengthField) cfg.Profile.Validate(); // LF-FMT-3 before any byte
                cfg.MaxPayload = o.GetLong("max-payload", 0);
                cfg.Sink = o.Flag("sink");
                string ioMode = o.Get("io", "blocking");
                if (ioMode != "blocking" && ioMode != "saea") throw new ArgumentException("--io must be blocking or saea");
                cfg.Blocking = ioMode == "blocking";
                long threads = o.GetLong("threads", 0);
                if (threads > 0)
                {
                    int w, io;
                    ThreadPool.GetMinThreads(out w, out io);
                    ThreadPool.SetMinThreads(Math.Max(w, (int)threads), Math.Max(io, (int)threads));
                }
            }
            catch (Exception e)
            {
                Console.Error.WriteLine("fp-server: " + e.Message);
                Console.Error.WriteLine("usage: fp-server --protocol standard|length-field --listen HOST:PORT [--lf-offset N] [--lf-size S] [--max-payload BYTES] [--sink] [--threads N] [--io blocking|saea]");
                return 2;
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
