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
    /// <summary>The server-wide resource limits (*-RES-*, reference-impls/README.md "Resource limits"):
    /// the spec's defaults, set by the generic flags.</summary>
    sealed class ResourceLimits
    {
        /// <summary>A connection holding at most this is never closed for the budget (*-RES-2).</summary>
        public const long Floor = 64 * 1024;
        public long MemoryBudget = 256L * 1024 * 1024;   // --memory-budget
        public long IdleTimeoutMs = 30000;               // --idle-timeout-ms
        public long FrameTimeoutMs = 10000;              // --frame-timeout-ms
        public long MaxOutputBytes = 1024 * 1024;        // --max-output-bytes
        public long WriteTimeoutMs = 10000;              // --write-timeout-ms
        public int MaxConnections = 4096;                // --max-connections
    }

    sealed class ServerConfig
    {
        public FrameCodec Codec;
        public bool Sink;
        /// <summary>--io epoll (the default on Linux) | blocking (the default elsewhere) | saea.</summary>
        public string Io = Environment.OSVersion.Platform == PlatformID.Unix ? "epoll" : "blocking";
        public int Threads = Environment.ProcessorCount;   // --threads: event loops (epoll), pool minimum (others)
        public ResourceLimits Limits = new ResourceLimits();
    }

    sealed class Counters
    {
        public long Connections, Frames, Bytes, ProtocolErrors;
        /// <summary>Connections closed for a limit, connections refused at the connection limit, failed accepts.</summary>
        public long ClosedBudget, ClosedIdle, ClosedFrame, ClosedWrite, ClosedHandshake, Refused, AcceptErrors;

        /// <summary>Adds what a session counted since the last call (reported = the session's totals
        /// already added).</summary>
        public void Add(ServerSession s, ref long reportedFrames, ref long reportedBytes)
        {
            long f = s.Frames, b = s.PayloadBytes;
            if (f != reportedFrames) { Interlocked.Add(ref Frames, f - reportedFrames); reportedFrames = f; }
            if (b != reportedBytes) { Interlocked.Add(ref Bytes, b - reportedBytes); reportedBytes = b; }
        }
    }

    static class Clock
    {
        static readonly double MsPerTick = 1000.0 / Stopwatch.Frequency;
        /// <summary>Monotonic milliseconds (keeps running while the process is stopped).</summary>
        public static long NowMs() { return (long)(Stopwatch.GetTimestamp() * MsPerTick); }
    }

    /// <summary>
    /// What both I/O paths share: the state the sweeper and the memory budget judge, published by the
    /// connection's I/O path after each read and send (the session itself is only touched by that
    /// path), and the closing. Timeouts (*-RES-3/4/5) are checked by <see cref="EchoServer"/>'s
    /// sweeper thread; before closing for silence it asks the kernel whether bytes are waiting
    /// (FIONREAD), so a server that was paused closes nobody whose bytes it has not read (*-RES-8).
    /// </summary>
    abstract class ConnectionBase
    {
        protected readonly EchoServer Server;
        protected readonly Socket Sock;
        protected readonly ServerSession Session;
        protected readonly ResourceLimits Limits;
        long _held;                 // accounted in the server's total (input held + output pending)
        long _lastRx, _acceptedAt, _pendingOut, _outProgressAt;
        volatile bool _unfinished, _opening;
        int _closed;
        protected volatile bool Aborted;   // closed by the server for a limit: the I/O path stops at once
        protected long ReportedFrames, ReportedBytes;

        protected ConnectionBase(EchoServer server, Socket socket, ServerConfig cfg)
        {
            Server = server;
            Sock = socket;
            Limits = cfg.Limits;
            Session = cfg.Codec.NewSession(cfg.Sink);
            long now = Clock.NowMs();
            _acceptedAt = _lastRx = _outProgressAt = now;
            _opening = Session.Opening;
        }

        public abstract void Start();

        public long Held { get { return Interlocked.Read(ref _held); } }
        public bool IsClosed { get { return Volatile.Read(ref _closed) != 0; } }

        /// <summary>The I/O path read bytes now.</summary>
        protected void NoteReceived() { Interlocked.Exchange(ref _lastRx, Clock.NowMs()); }

        /// <summary>The output still to send; a smaller value than before (or new output after none) is progress.</summary>
        protected void NotePending(long pending)
        {
            long old = Interlocked.Exchange(ref _pendingOut, pending);
            if (pending > 0 && (old == 0 || pending < old)) Interlocked.Exchange(ref _outProgressAt, Clock.NowMs());
        }

        /// <summary>After the session took a read: publish what it holds and what it has to send, and
        /// apply the memory budget (which may close this very connection: check <see cref="Aborted"/>).</summary>
        protected void Publish(long pendingOut)
        {
            long input = Session.HeldInput;
            _unfinished = input > 0;
            _opening = Session.Opening;
            NotePending(pendingOut);
            SetHeld(input + pendingOut);
            Account();
        }

        void SetHeld(long v)
        {
            if (IsClosed || Aborted) v = 0;
            long old = Interlocked.Exchange(ref _held, v);
            if (v != old) Server.AddHeld(v - old);
        }

        protected void Account()
        {
            lock (this) Server.Counters.Add(Session, ref ReportedFrames, ref ReportedBytes);
        }

        /// <summary>Forgets the clocks after the server itself was not running (a pause, *-RES-8).</summary>
        public void ResetClocks(long now)
        {
            Interlocked.Exchange(ref _lastRx, now);
            Interlocked.Exchange(ref _outProgressAt, now);
            if (_opening) Interlocked.Exchange(ref _acceptedAt, now);
        }

        int Waiting()
        {
            try { return Sock.Available; } catch (Exception) { return 0; }
        }

        /// <summary>The sweeper's judgement of this connection at <paramref name="now"/>.</summary>
        public void CheckTimeouts(long now)
        {
            if (IsClosed) return;
            if (Interlocked.Read(ref _pendingOut) > 0)
            {
                if (now - Interlocked.Read(ref _outProgressAt) > Limits.WriteTimeoutMs)
                    Abort(ref Server.Counters.ClosedWrite, true);          // RES-5
                return;
            }
            if (_opening)
            {
                if (now - Interlocked.Read(ref _acceptedAt) > Limits.IdleTimeoutMs && Waiting() == 0)
                    Abort(ref Server.Counters.ClosedHandshake, true);      // RES-3 (the opening handshake)
                return;
            }
            long silent = now - Interlocked.Read(ref _lastRx);
            if (_unfinished)
            {
                if (silent > Limits.FrameTimeoutMs && Waiting() == 0) Abort(ref Server.Counters.ClosedFrame, true);   // RES-4
            }
            else if (silent > Limits.IdleTimeoutMs && Waiting() == 0) Abort(ref Server.Counters.ClosedIdle, false) ; // RES-3
        }

        /// <summary>Closes the connection for a limit (counted in <paramref name="counter"/>); with
        /// <paramref name="reset"/> the close is a reset (nothing unfinished is answered).</summary>
        public void Abort(ref long counter, bool reset)
        {
            if (IsClosed || Aborted) return;
            Interlocked.Increment(ref counter);
            Aborted = true;
            SetHeld(0);   // its memory leaves the total now (the budget loop goes on with the next one)
            if (reset) { try { Sock.LingerState = new LingerOption(true, 0); } catch (Exception) { } }
            try { Sock.Shutdown(SocketShutdown.Both); } catch (Exception) { } // wakes a blocked receive or send
            AfterAbort();
        }

        /// <summary>After <see cref="Abort"/>: close now, or let the I/O path do it. (Closing a socket
        /// on which another thread is blocked makes Mono wait up to a second for that thread: the
        /// sweeper and the budget must not wait.)</summary>
        protected virtual void AfterAbort() { Close(); }

        public void Close()
        {
            if (Interlocked.Exchange(ref _closed, 1) != 0) return;
            SetHeld(0);
            Account();
            try { Sock.Close(); } catch (Exception) { }
            Server.Remove(this);
            OnClosed();
        }

        protected virtual void OnClosed() { }
    }

    /// <summary>
    /// One connection served by a dedicated thread with blocking socket calls around the protocol's
    /// server session: receive → session → send its output → receive. On Mono this has much lower
    /// per-request latency than SocketAsyncEventArgs (no I/O-thread hand-off). Nothing is read while
    /// output is pending, so the pending output is at most the replies to one read (reads are at most
    /// min(64 KiB, --max-output-bytes)) or one reply (*-RES-5). --io blocking.
    /// </summary>
    sealed class BlockingConnection : ConnectionBase
    {
        byte[] _rx;
        readonly int _readSize;

        public BlockingConnection(EchoServer server, Socket socket, ServerConfig cfg) : base(server, socket, cfg)
        {
            _readSize = EchoServer.ReadSize(cfg.Limits);
            _rx = new byte[Math.Min(EchoServer.FirstRead, _readSize)];
        }

        /// <summary>The thread wakes from its receive or send (the socket was shut down) and closes.</summary>
        protected override void AfterAbort() { }

        public override void Start()
        {
            var t = new Thread(Run, 256 * 1024) { IsBackground = true, Name = "fp-conn" };
            t.Start();
        }

        void Run()
        {
            try
            {
                while (!Session.Closed && !Aborted)
                {
                    int n = Sock.Receive(_rx, 0, _rx.Length, SocketFlags.None);
                    if (Aborted) return;
                    if (n > 0) NoteReceived();
                    bool grow = n == _rx.Length && _rx.Length < _readSize;
                    if (n <= 0) Session.EndOfInput(); // half-close: the replies owed, then close
                    else Session.Receive(new ReadOnlySpan<byte>(_rx, 0, n));
                    Publish(Session.OutputLength);
                    if (Aborted) return;
                    SendOutput();
                    if (n <= 0) break;
                    if (grow) _rx = new byte[_readSize];   // reads fill the small buffer: a busy connection
                }
                if (Aborted) return;
                if (Session.Error.IsSet) Interlocked.Increment(ref Server.Counters.ProtocolErrors);
                Session.Dispose();   // its replies are sent: give its buffers back before the drain
                try { Sock.Shutdown(SocketShutdown.Send); } catch (Exception) { }
                // STD-ECHO-4 / LF-ECHO-2 after an error: read until the peer closes (bounded), so that
                // the close does not reset the replies in flight away.
                EchoServer.Drain(Sock, _rx);
            }
            catch (Exception) { }
            finally
            {
                Close();
                Session.Dispose();
            }
        }

        void SendOutput()
        {
            int len = Session.OutputLength, off = 0;
            byte[] buf = Session.OutputBuffer;
            while (off < len)
            {
                int m = Sock.Send(buf, off, len - off, SocketFlags.None);
                if (m <= 0) throw new SocketException((int)SocketError.ConnectionReset);
                off += m;
                NotePending(len - off);
            }
            Session.ClearOutput();
            Publish(0);
        }
    }

    /// <summary>
    /// One connection driven by SocketAsyncEventArgs around the protocol's server session, in a
    /// strict receive → session → send its output → receive cycle: nothing is read while output is
    /// pending (*-RES-5), so the bytes buffered per connection stay bounded: one read buffer, what the
    /// session holds for the unfinished frame, and the replies to one read. --io saea.
    /// </summary>
    sealed class Connection : ConnectionBase
    {
        enum Phase { Receive, Send, Drain, Close }

        readonly SocketAsyncEventArgs _rx = new SocketAsyncEventArgs();
        readonly SocketAsyncEventArgs _tx = new SocketAsyncEventArgs();
        byte[] _rxBuf;
        readonly int _readSize;
        int _outSent;
        Phase _phase = Phase.Receive;
        bool _drainAfterSend;   // the session closed: half-close, then discard input until EOF (bounded)
        bool _eof;              // the peer half-closed: close once the output is sent
        int _drained;
        int _released;
        Timer _drainTimer;

        public Connection(EchoServer server, Socket socket, ServerConfig cfg) : base(server, socket, cfg)
        {
            _readSize = EchoServer.ReadSize(cfg.Limits);
            _rxBuf = ArrayPool<byte>.Shared.Rent(EchoServer.FirstRead);
            _rx.Completed += OnIo;
            _tx.Completed += OnIo;
        }

        public override void Start() { Run(); }

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
                    if (Aborted) _phase = Phase.Close;
                    switch (_phase)
                    {
                        case Phase.Receive:
                        case Phase.Drain:
                            _rx.SetBuffer(_rxBuf, 0, Math.Min(_rxBuf.Length, _readSize));
                            if (Sock.ReceiveAsync(_rx)) return;
                            AfterReceive();
                            break;
                        case Phase.Send:
                            _tx.SetBuffer(Session.OutputBuffer, _outSent, Session.OutputLength - _outSent);
                            if (Sock.SendAsync(_tx)) return;
                            AfterSend();
                            break;
                        default:
                            Close();
                            Release();
                            return;
                    }
                }
            }
            catch (Exception)
            {
                _phase = Phase.Close;
                Close();
                Release();
            }
        }

        /// <summary>No operation is pending any more (the I/O path ended): give the buffers back.</summary>
        void Release()
        {
            if (Interlocked.Exchange(ref _released, 1) != 0) return;
            Session.Dispose();
            ArrayPool<byte>.Shared.Return(_rxBuf);
        }

        void AfterReceive()
        {
            if (_rx.SocketError != SocketError.Success || Aborted) { _phase = Phase.Close; return; }
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
                Session.EndOfInput();
            }
            else
            {
                NoteReceived();
                Session.Receive(new ReadOnlySpan<byte>(_rxBuf, 0, n));
                if (n == _rxBuf.Length && n < _readSize)
                {   // reads fill the small buffer: a busy connection gets the full-size one
                    ArrayPool<byte>.Shared.Return(_rxBuf);
                    _rxBuf = ArrayPool<byte>.Shared.Rent(_readSize);
                }
            }
            Publish(Session.OutputLength);
            if (Aborted) { _phase = Phase.Close; return; }
            if (Session.Closed)
            {
                if (Session.Error.IsSet) Interlocked.Increment(ref Server.Counters.ProtocolErrors);
                // At EOF the peer has closed its side: nothing to drain. After an error, drain.
                if (!_eof) _drainAfterSend = true;
            }
            if (Session.OutputLength > 0) _phase = Phase.Send;
            else AfterRepliesSent();
        }

        void AfterSend()
        {
            if (_tx.SocketError != SocketError.Success || _tx.BytesTransferred <= 0 || Aborted) { _phase = Phase.Close; return; }
            _outSent += _tx.BytesTransferred;
            NotePending(Session.OutputLength - _outSent);
            if (_outSent < Session.OutputLength) return; // partial send: continue
            _outSent = 0;
            Session.ClearOutput();
            Publish(0);
            AfterRepliesSent();
        }

        void AfterRepliesSent()
        {
            if (_drainAfterSend)
            {
                _drainAfterSend = false;
                Session.Dispose();   // its replies are sent: give its buffers back before the drain (idempotent)
                try { Sock.Shutdown(SocketShutdown.Send); } catch (Exception) { }
                _phase = Phase.Drain;
                // Reading until the peer's EOF avoids a reset that could destroy the replies in flight.
                _drainTimer = new Timer(DrainTimeout, null, EchoServer.DrainMs, Timeout.Infinite);
                return;
            }
            _phase = Session.Closed || _eof ? Phase.Close : Phase.Receive;
        }

        void DrainTimeout(object _) { Close(); }

        protected override void OnClosed()
        {
            if (_drainTimer != null) _drainTimer.Dispose();
            // The session and the read buffer are released by the I/O path (Release) once no operation
            // is pending: a pending receive completes with an error after the socket is closed.
        }
    }

    sealed class EchoServer
    {
        /// <summary>After the session closed: discard at most this much input, for at most DrainMs.</summary>
        public const int DrainLimit = 4 * 1024 * 1024;
        public const int DrainMs = 2000;
        /// <summary>A connection's first read buffer; one that a read fills is replaced by one of
        /// <see cref="ReadSize"/> (an idle connection holds 4 KiB, a busy one 64 KiB).</summary>
        public const int FirstRead = 4096;

        /// <summary>The read size: 64 KiB, or --max-output-bytes if smaller (the replies to one read
        /// stay within the output bound, *-RES-5), at least 1 KiB.</summary>
        public static int ReadSize(ResourceLimits lim) { return (int)Math.Min(64 * 1024, Math.Max(1024, lim.MaxOutputBytes)); }

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
        readonly ResourceLimits _lim;
        readonly Socket _listener;
        readonly HashSet<ConnectionBase> _conns = new HashSet<ConnectionBase>();
        readonly AutoResetEvent _freed = new AutoResetEvent(false);   // a connection closed (accept retry)
        readonly object _budgetLock = new object();
        long _totalHeld;
        volatile bool _stopping;
        readonly EventLoop[] _loops;   // --io epoll
        int _nextLoop;

        public EchoServer(ServerConfig cfg, IPEndPoint ep)
        {
            _cfg = cfg;
            _lim = cfg.Limits;
            if (cfg.Io == "epoll")
            {
                _loops = new EventLoop[cfg.Threads];
                for (int i = 0; i < _loops.Length; i++) _loops[i] = new EventLoop(i);
            }
            _listener = new Socket(ep.AddressFamily, SocketType.Stream, ProtocolType.Tcp);
            _listener.SetSocketOption(SocketOptionLevel.Socket, SocketOptionName.ReuseAddress, true);
            _listener.Bind(ep);
            _listener.Listen(1024);
        }

        public IPEndPoint LocalEndPoint { get { return (IPEndPoint)_listener.LocalEndPoint; } }

        public void StartAccepting()
        {
            new Thread(AcceptLoop) { IsBackground = true, Name = "fp-accept" }.Start();
            new Thread(Sweep) { IsBackground = true, Name = "fp-sweep" }.Start();
        }

        void AcceptLoop()
        {
            while (!_stopping)
            {
                Socket s;
                try { s = _listener.Accept(); }
                catch (SocketException e)
                {
                    if (_stopping) return;
                    if (e.SocketErrorCode == SocketError.ConnectionAborted || e.SocketErrorCode == SocketError.ConnectionReset
                        || e.SocketErrorCode == SocketError.Interrupted) continue;   // that peer is gone already
                    // EMFILE/ENFILE/ENOBUFS/ENOMEM (RES-7): keep serving; retry after a pause or when a connection closes
                    Interlocked.Increment(ref Counters.AcceptErrors);
                    _freed.WaitOne(250);
                    continue;
                }
                catch (Exception)
                {
                    if (_stopping) return;
                    Interlocked.Increment(ref Counters.AcceptErrors);
                    _freed.WaitOne(250);
                    continue;
                }
                int open;
                lock (_conns) open = _conns.Count;
                if (open >= _lim.MaxConnections)
                {
                    // RES-6: accepted and closed at once, nothing read, nothing written
                    Interlocked.Increment(ref Counters.Refused);
                    try { s.Close(); } catch (Exception) { }
                    continue;
                }
                try
                {
                    s.NoDelay = true; // STD-ECHO-6
                    ConnectionBase c = NewConnection(s);
                    lock (_conns)
                    {
                        if (_stopping) { s.Close(); return; }
                        _conns.Add(c);
                    }
                    Interlocked.Increment(ref Counters.Connections);
                    // A thread per connection (--io blocking) is started from the pool, so that the accept
                    // loop keeps accepting (and refusing beyond the limit, RES-6) while threads are created.
                    if (c is BlockingConnection) ThreadPool.UnsafeQueueUserWorkItem(StartConnection, c);
                    else StartConnection(c);
                }
                catch (Exception e)
                {
                    Console.Error.WriteLine("fp-server: accept: " + e.Message);
                    try { s.Close(); } catch (Exception) { }
                }
            }
        }

        ConnectionBase NewConnection(Socket s)
        {
            switch (_cfg.Io)
            {
                case "saea": return new Connection(this, s, _cfg);
                case "epoll": return new EpollConnection(this, s, _cfg, _loops[_nextLoop++ % _loops.Length]);
                default: return new BlockingConnection(this, s, _cfg);
            }
        }

        static void StartConnection(object state)
        {
            var c = (ConnectionBase)state;
            try { c.Start(); }
            catch (Exception e) { Console.Error.WriteLine("fp-server: cannot serve a connection: " + e.Message); c.Close(); }
        }

        public void Remove(ConnectionBase c)
        {
            lock (_conns) _conns.Remove(c);
            _freed.Set();
        }

        ConnectionBase[] Snapshot()
        {
            lock (_conns)
            {
                var all = new ConnectionBase[_conns.Count];
                _conns.CopyTo(all);
                return all;
            }
        }

        /// <summary>The memory budget (RES-1, RES-2): a connection's held memory changed by
        /// <paramref name="delta"/>; beyond the budget, close those holding the most (never one
        /// holding 64 KiB or less) until the total is back within it.</summary>
        public void AddHeld(long delta)
        {
            long total = Interlocked.Add(ref _totalHeld, delta);
            if (delta <= 0 || total <= _lim.MemoryBudget) return;
            lock (_budgetLock)
            {
                while (Interlocked.Read(ref _totalHeld) > _lim.MemoryBudget)
                {
                    ConnectionBase big = null;
                    long most = ResourceLimits.Floor;
                    foreach (ConnectionBase c in Snapshot())
                    {
                        long h = c.Held;
                        if (h > most && !c.IsClosed) { most = h; big = c; }
                    }
                    if (big == null) break;
                    big.Abort(ref Counters.ClosedBudget, true);   // its held memory leaves the total now
                }
            }
        }

        /// <summary>The timeouts (RES-3/4/5), judged every tenth of the shortest one (20 ms .. 1 s).
        /// A round that comes much later than planned means this process was not running (SIGSTOP, a
        /// starved machine): the clocks restart instead (RES-8).</summary>
        void Sweep()
        {
            long every = Math.Min(1000, Math.Max(20, Math.Min(_lim.IdleTimeoutMs, Math.Min(_lim.FrameTimeoutMs, _lim.WriteTimeoutMs)) / 10));
            long last = Clock.NowMs();
            while (!_stopping)
            {
                Thread.Sleep((int)every);
                long now = Clock.NowMs();
                long gap = now - last;
                last = now;
                ConnectionBase[] all = Snapshot();
                if (gap > Math.Max(1000, 5 * every))
                {
                    foreach (ConnectionBase c in all) c.ResetClocks(now);
                    continue;
                }
                foreach (ConnectionBase c in all)
                {
                    try { c.CheckTimeouts(now); } catch (Exception) { }
                }
            }
        }

        public void Stop()
        {
            _stopping = true;
            try { _listener.Close(); } catch (Exception) { }
            foreach (ConnectionBase c in Snapshot()) c.Close();
        }
    }

    /// <summary>The soft RLIMIT_NOFILE raised towards the hard limit, so that accepting does not fail
    /// before the connection limit (RES-6/7). Linux only; elsewhere nothing happens.</summary>
    static class Descriptors
    {
        [StructLayout(LayoutKind.Sequential)]
        struct RLimit { public ulong Cur, Max; }

        [DllImport("libc", SetLastError = true)] static extern int getrlimit(int resource, out RLimit rlim);
        [DllImport("libc", SetLastError = true)] static extern int setrlimit(int resource, ref RLimit rlim);
        const int RLIMIT_NOFILE = 7;

        public static void Raise(long connections)
        {
            try
            {
                if (Environment.OSVersion.Platform != PlatformID.Unix) return;
                RLimit r;
                if (getrlimit(RLIMIT_NOFILE, out r) != 0) return;
                ulong want = (ulong)connections + 256;
                if (r.Cur >= want) return;
                r.Cur = Math.Min(want, r.Max);
                setrlimit(RLIMIT_NOFILE, ref r);
            }
            catch (Exception) { }
        }
    }

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
