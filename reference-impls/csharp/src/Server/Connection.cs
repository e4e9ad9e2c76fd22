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
}
