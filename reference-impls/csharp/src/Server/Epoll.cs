using System;
using System.Collections.Generic;
using System.Net.Sockets;
using System.Runtime.InteropServices;
using System.Threading;

namespace Frameproof.Server
{
    /// <summary>
    /// Linux epoll and the socket calls it drives, through P/Invoke to libc. Neither Mono 6.8 nor the
    /// .NET class library exposes a readiness loop a server can own: Mono's SocketAsyncEventArgs hands
    /// every completion to a pool thread (measured slower than a thread per connection, README), and
    /// Socket.Select copies its lists on every call. So the event loop is written here, on the kernel's
    /// interface; everything above it (sessions, limits, counters) is the shared server code.
    /// </summary>
    static unsafe class Native
    {
        public const int EPOLL_CTL_ADD = 1, EPOLL_CTL_DEL = 2, EPOLL_CTL_MOD = 3;
        public const uint EPOLLIN = 0x001, EPOLLOUT = 0x004, EPOLLERR = 0x008, EPOLLHUP = 0x010;
        public const int EPOLL_CLOEXEC = 0x80000;
        public const int MSG_NOSIGNAL = 0x4000;
        public const int EINTR = 4, EAGAIN = 11;

        /// <summary>struct epoll_event is packed (12 bytes) on x86 and x86-64, 16 bytes elsewhere.</summary>
        public static readonly int EventSize = RuntimeInformation.ProcessArchitecture == Architecture.X64
            || RuntimeInformation.ProcessArchitecture == Architecture.X86 ? 12 : 16;
        public static readonly int DataOffset = EventSize == 12 ? 4 : 8;

        [DllImport("libc", SetLastError = true)] public static extern int epoll_create1(int flags);
        [DllImport("libc", SetLastError = true)] public static extern int epoll_ctl(int epfd, int op, int fd, byte* ev);
        [DllImport("libc", SetLastError = true)] public static extern int epoll_wait(int epfd, byte* events, int maxevents, int timeout);
        [DllImport("libc", SetLastError = true)] public static extern IntPtr recv(int fd, byte* buf, UIntPtr len, int flags);
        [DllImport("libc", SetLastError = true)] public static extern IntPtr send(int fd, byte* buf, UIntPtr len, int flags);

        public static int Ctl(int epfd, int op, int fd, uint events, long data)
        {
            byte* ev = stackalloc byte[16];
            *(uint*)ev = events;
            *(long*)(ev + DataOffset) = data;
            return epoll_ctl(epfd, op, fd, ev);
        }
    }

    /// <summary>
    /// One event-loop thread (--io epoll; --threads of them, connections dealt round-robin): a
    /// level-triggered epoll set of non-blocking sockets, one 64 KiB read buffer shared by all of them
    /// (a session copies what it keeps of a read), and the connections draining after an error with
    /// their deadlines. Only this thread touches its connections' sessions.
    /// </summary>
    sealed unsafe class EventLoop
    {
        const int MaxEvents = 256;
        readonly int _ep;
        readonly byte[] _read = new byte[64 * 1024];
        readonly Dictionary<long, EpollConnection> _conns = new Dictionary<long, EpollConnection>();
        readonly List<EpollConnection> _draining = new List<EpollConnection>();
        long _nextId;

        public EventLoop(int index)
        {
            _ep = Native.epoll_create1(Native.EPOLL_CLOEXEC);
            if (_ep < 0) throw new InvalidOperationException("epoll_create1 failed (errno " + Marshal.GetLastWin32Error() + ")");
            new Thread(Run, 256 * 1024) { IsBackground = true, Name = "fp-epoll-" + index }.Start();
        }

        /// <summary>From the accept thread: the connection joins this loop, reading.</summary>
        public void Add(EpollConnection c)
        {
            lock (_conns)
            {
                c.Id = ++_nextId;
                _conns[c.Id] = c;
            }
            if (Native.Ctl(_ep, Native.EPOLL_CTL_ADD, c.Fd, Native.EPOLLIN, c.Id) != 0)
            {
                lock (_conns) _conns.Remove(c.Id);
                throw new InvalidOperationException("epoll_ctl(ADD) failed (errno " + Marshal.GetLastWin32Error() + ")");
            }
        }

        public void Interest(EpollConnection c, uint events)
        {
            Native.Ctl(_ep, Native.EPOLL_CTL_MOD, c.Fd, events, c.Id);
        }

        public void Remove(EpollConnection c)
        {
            Native.Ctl(_ep, Native.EPOLL_CTL_DEL, c.Fd, 0, c.Id);
            lock (_conns) _conns.Remove(c.Id);
            _draining.Remove(c);
        }

        public void Draining(EpollConnection c) { _draining.Add(c); }

        void Run()
        {
            byte* events = (byte*)Marshal.AllocHGlobal(MaxEvents * Native.EventSize);
            fixed (byte* buf = _read)
            {
                while (true)
                {
                    int n = Native.epoll_wait(_ep, events, MaxEvents, _draining.Count > 0 ? 100 : -1);
                    if (n < 0)
                    {
                        if (Marshal.GetLastWin32Error() == Native.EINTR) continue;
                        Console.Error.WriteLine("fp-server: epoll_wait failed (errno " + Marshal.GetLastWin32Error() + ")");
                        return;
                    }
                    for (int i = 0; i < n; i++)
                    {
                        byte* e = events + i * Native.EventSize;
                        uint ev = *(uint*)e;
                        long id = *(long*)(e + Native.DataOffset);
                        EpollConnection c;
                        lock (_conns) { if (!_conns.TryGetValue(id, out c)) continue; }
                        try { c.OnReady(ev, buf, _read.Length); }
                        catch (Exception) { c.Finish(); }
                    }
                    if (_draining.Count > 0)
                    {
                        long now = Clock.NowMs();
                        for (int i = _draining.Count - 1; i >= 0; i--)
                            if (_draining[i].DrainDeadline <= now) _draining[i].Finish();
                    }
                }
            }
        }
    }

    /// <summary>
    /// One connection of an <see cref="EventLoop"/>: the same receive → session → send its output →
    /// receive cycle as the other paths (nothing is read while output is pending, *-RES-5), driven by
    /// readiness instead of a thread or completions. --io epoll.
    /// </summary>
    sealed unsafe class EpollConnection : ConnectionBase
    {
        readonly EventLoop _loop;
        readonly int _readSize;
        public readonly int Fd;
        public long Id;
        public long DrainDeadline;
        int _outSent, _drained;
        bool _writing, _draining, _drainAfterSend, _eof, _finished;

        public EpollConnection(EchoServer server, Socket socket, ServerConfig cfg, EventLoop loop) : base(server, socket, cfg)
        {
            _loop = loop;
            _readSize = EchoServer.ReadSize(cfg.Limits);
            socket.Blocking = false;
            Fd = (int)socket.Handle;
        }

        public override void Start() { _loop.Add(this); }

        /// <summary>The loop sees the shut-down socket as readable and finishes the connection.</summary>
        protected override void AfterAbort() { }

        public void OnReady(uint ev, byte* buf, int bufLen)
        {
            if (_finished) return;
            if (Aborted) { Finish(); return; }
            if (_draining) { Drain(buf, bufLen); return; }
            if (_writing)
            {
                if (Flush()) AfterRepliesSent();
                return;
            }
            long got = (long)Native.recv(Fd, buf, (UIntPtr)Math.Min(bufLen, _readSize), 0);
            if (got < 0)
            {
                int errno = Marshal.GetLastWin32Error();
                if (errno == Native.EAGAIN || errno == Native.EINTR) return;
                Finish();
                return;
            }
            if (got == 0)
            {
                _eof = true;
                Session.EndOfInput();   // half-close: the replies owed, then close
            }
            else
            {
                NoteReceived();
                Session.Receive(new ReadOnlySpan<byte>(buf, (int)got));
            }
            Publish(Session.OutputLength);
            if (Aborted) { Finish(); return; }
            if (Session.Closed)
            {
                if (Session.Error.IsSet) Interlocked.Increment(ref Server.Counters.ProtocolErrors);
                if (!_eof) _drainAfterSend = true;   // after an error: half-close, then drain (bounded)
            }
            if (Session.OutputLength > 0 && !Flush())
            {
                _writing = true;
                _loop.Interest(this, Native.EPOLLOUT);
                return;
            }
            AfterRepliesSent();
        }

        /// <summary>Sends the session's output; true when all of it is sent.</summary>
        bool Flush()
        {
            int len = Session.OutputLength;
            fixed (byte* p = Session.OutputBuffer)
            {
                while (_outSent < len)
                {
                    long m = (long)Native.send(Fd, p + _outSent, (UIntPtr)(len - _outSent), Native.MSG_NOSIGNAL);
                    if (m > 0)
                    {
                        _outSent += (int)m;
                        NotePending(len - _outSent);
                        continue;
                    }
                    int errno = Marshal.GetLastWin32Error();
                    if (m < 0 && (errno == Native.EAGAIN || errno == Native.EINTR)) return false;
                    throw new SocketException(errno);
                }
            }
            _outSent = 0;
            Session.ClearOutput();
            Publish(0);
            if (_writing)
            {
                _writing = false;
                _loop.Interest(this, Native.EPOLLIN);
            }
            return true;
        }

        void AfterRepliesSent()
        {
            if (Aborted) { Finish(); return; }
            if (_drainAfterSend)
            {
                _drainAfterSend = false;
                Session.Dispose();   // its replies are sent: give its buffers back before the drain
                try { Sock.Shutdown(SocketShutdown.Send); } catch (Exception) { }
                // STD-ECHO-4 / LF-ECHO-2: read until the peer closes (bounded in bytes and time), so that
                // the close does not reset the replies in flight away
                _draining = true;
                DrainDeadline = Clock.NowMs() + EchoServer.DrainMs;
                _loop.Draining(this);
                return;
            }
            if (Session.Closed || _eof) Finish();
        }

        void Drain(byte* buf, int bufLen)
        {
            while (true)
            {
                long m = (long)Native.recv(Fd, buf, (UIntPtr)bufLen, 0);
                if (m > 0)
                {
                    _drained += (int)m;
                    if (_drained > EchoServer.DrainLimit) break;
                    continue;
                }
                if (m < 0)
                {
                    int errno = Marshal.GetLastWin32Error();
                    if (errno == Native.EAGAIN || errno == Native.EINTR) return;
                }
                break;   // EOF or an error
            }
            Finish();
        }

        /// <summary>Leaves the loop, closes, gives the session's buffers back (loop thread only).</summary>
        public void Finish()
        {
            if (_finished) return;
            _finished = true;
            _loop.Remove(this);
            Close();
            Session.Dispose();
        }
    }
}
