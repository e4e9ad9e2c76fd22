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
            SetHeld(input + Session.HeldState + pendingOut);
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
}
