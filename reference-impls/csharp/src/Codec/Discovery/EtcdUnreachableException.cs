using System;

namespace Frameproof.Discovery
{
    /// <summary>etcd could not be reached within the deadline (refused, reset, timed out, an
    /// unreadable answer), or it answered an error (<see cref="EtcdMessage"/> non-null: the
    /// gateway's {"error", "code", "message"}). Both are CONNECTION_ERROR to a caller
    /// (DISC-ETCD-7); the registry looks into <see cref="EtcdMessage"/> for "lease not found".</summary>
    public sealed class EtcdUnreachableException : Exception
    {
        public readonly string EtcdMessage;

        public EtcdUnreachableException(string message, string etcdMessage = null, Exception inner = null)
            : base(message, inner)
        {
            EtcdMessage = etcdMessage;
        }

        public bool LeaseNotFound { get { return EtcdMessage != null && EtcdMessage.IndexOf("lease not found", StringComparison.Ordinal) >= 0; } }
    }
}
