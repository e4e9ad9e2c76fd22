using System;

namespace Frameproof.Codec
{
    /// <summary>What an rpc endpoint says on the wire about an error: the error code of its RESPONSE
    /// (<see cref="ProtocolError.Detail"/>; the testee's <c>RpcErrorDetail</c>).</summary>
    public sealed class RpcErrorDetail
    {
        public readonly uint ErrorCode;
        public RpcErrorDetail(uint errorCode) { ErrorCode = errorCode; }
    }
}
