using System;
using System.Buffers;
using System.Buffers.Binary;
using System.Collections.Generic;
using System.Runtime.InteropServices;

namespace Frameproof.Codec
{
    /// <summary>Outcomes of rpc client matching (called synchronously by <see cref="RpcMatcher"/>).</summary>
    public interface IRpcMatchObserver
    {
        void OnReply(long request, object state, ref RpcFrame frame);
        void OnTimeout(long request, object state);
        void OnFailed(long request, object state);
        void OnUnmatched(ref RpcFrame frame);
    }
}
