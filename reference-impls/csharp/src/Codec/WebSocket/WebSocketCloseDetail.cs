using System;

namespace Frameproof.Codec
{
    /// <summary><see cref="ProtocolError.Detail"/> of a websocket error: the close code the endpoint
    /// sends (the testee's <c>WebSocketErrorDetail</c>).</summary>
    public sealed class WebSocketCloseDetail
    {
        public readonly uint Code;
        public WebSocketCloseDetail(uint code) { Code = code; }
    }
}
