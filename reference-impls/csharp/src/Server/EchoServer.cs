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
}
