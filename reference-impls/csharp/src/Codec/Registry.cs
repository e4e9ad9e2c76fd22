using System;
using System.Collections.Generic;

namespace Frameproof.Codec
{
    /// <summary>
    /// The one place that knows which protocols this implementation has. The testee, fp-server,
    /// fp-load and fp-bench look protocols up here and use them only through
    /// <see cref="ProtocolModule"/> / <see cref="FrameCodec"/>, and the testee's messages reach a
    /// protocol's members of their oneofs through <see cref="OneofMember"/>. A new protocol adds its
    /// module (src/Codec/NAME.cs or a folder src/Codec/NAME/) and one line below; a protocol left
    /// out is answered <c>skipped</c> by the testee and refused as a usage error by the programs.
    /// </summary>
    public static class Registry
    {
        static readonly ProtocolModule[] Modules =
        {
            StandardProtocol.Module,      // spec/standard.md
            LengthFieldProtocol.Module,   // spec/length-field.md
            RpcProtocol.Module,           // spec/rpc.md
            WebSocketProtocol.Module,     // spec/websocket.md
        };

        /// <summary>The registered protocol names, in registration order.</summary>
        public static IEnumerable<string> Names
        {
            get { foreach (ProtocolModule m in Modules) yield return m.Name; }
        }

        /// <summary>The module of a protocol, or null if this implementation does not have it.</summary>
        public static ProtocolModule Find(string name)
        {
            foreach (ProtocolModule m in Modules)
                if (m.Name == name) return m;
            return null;
        }

        /// <summary>A configured codec, or null for an unknown protocol.</summary>
        public static FrameCodec Create(CodecSpec spec)
        {
            ProtocolModule m = Find(spec.Protocol);
            return m == null ? null : m.Create(spec);
        }

        /// <summary>True if some registered protocol takes its parameters under this codec JSON key.</summary>
        public static bool IsParamsKey(string key)
        {
            foreach (ProtocolModule m in Modules)
                if (m.ParamsKey == key) return true;
            return false;
        }

        /// <summary>The member with this field number of a testee oneof, or null if no registered
        /// protocol has one there.</summary>
        public static TesteeMember OneofMember(TesteeOneof oneof, int field)
        {
            foreach (ProtocolModule m in Modules)
            {
                TesteeMember t = m.OneofMember(oneof);
                if (t != null && t.Field == field) return t;
            }
            return null;
        }

        /// <summary>The member of a testee oneof whose object <paramref name="value"/> is, with its
        /// protocol's module; null (and a null module) if no registered protocol's is.</summary>
        public static TesteeMember OneofMemberHolding(TesteeOneof oneof, object value, out ProtocolModule module)
        {
            module = null;
            if (value == null) return null;
            foreach (ProtocolModule m in Modules)
            {
                TesteeMember t = m.OneofMember(oneof);
                if (t != null && t.Holds(value)) { module = m; return t; }
            }
            return null;
        }

        public static string UnknownMessage(string name)
        {
            return "unknown protocol '" + name + "' (this implementation has: " + string.Join(", ", Names) + ")";
        }
    }
}
