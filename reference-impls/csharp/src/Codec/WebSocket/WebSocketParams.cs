using System;

namespace Frameproof.Codec
{
    /// <summary>The websocket codec's parameters: codec JSON <c>{"websocket": {"role": "server"|"client",
    /// "max_message": N, "path": "/ws/echo", "subprotocol": "echo.v1", "permessage_deflate": true}}</c>, testee <c>WebSocketParams</c> (spec/websocket.md).</summary>
    public sealed class WebSocketParams
    {
        /// <summary>Client role: receives unmasked frames, sends masked ones (default: server).</summary>
        public bool Client;
        /// <summary>Largest message after reassembly; 0 = the spec default.</summary>
        public long MaxMessage;
        /// <summary>The echo service's resource path (websocket.path); null: any path (a client asks for "/").</summary>
        public string Path;
        /// <summary>The echo service's subprotocol (websocket.subprotocol); null: frameproof.echo, offered by no client.</summary>
        public string Subprotocol;
        /// <summary>websocket.permessage_deflate: the network server accepts permessage-deflate offers
        /// (spec/websocket-deflate.md); false (default): it declines every offer.</summary>
        public bool PermessageDeflate;
    }
}
