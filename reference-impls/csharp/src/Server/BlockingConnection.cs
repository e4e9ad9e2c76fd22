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
}
