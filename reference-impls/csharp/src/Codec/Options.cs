using System;
using System.Collections.Generic;
using System.Globalization;
using System.Net;

namespace Frameproof.Codec
{
    /// <summary>Minimal "--name value" / "--flag" command-line parsing shared by the programs.</summary>
    public sealed class Options
    {
        readonly Dictionary<string, string> _values = new Dictionary<string, string>();
        readonly HashSet<string> _flags = new HashSet<string>();

        public Options(string[] args, ICollection<string> flagNames)
        {
            for (int i = 0; i < args.Length; i++)
            {
                string a = args[i];
                if (!a.StartsWith("--", StringComparison.Ordinal)) throw new ArgumentException("unexpected argument '" + a + "'");
                int eq = a.IndexOf('=');
                if (eq > 0) { _values[a.Substring(2, eq - 2)] = a.Substring(eq + 1); continue; }
                string name = a.Substring(2);
                if (flagNames.Contains(name)) { _flags.Add(name); continue; }
                if (i + 1 >= args.Length) throw new ArgumentException("option --" + name + " needs a value");
                _values[name] = args[++i];
            }
        }

        public bool Has(string name) { return _values.ContainsKey(name) || _flags.Contains(name); }
        public bool Flag(string name) { return _flags.Contains(name); }

        public string Get(string name, string def)
        {
            string v;
            return _values.TryGetValue(name, out v) ? v : def;
        }

        public string Require(string name)
        {
            string v;
            if (!_values.TryGetValue(name, out v)) throw new ArgumentException("option --" + name + " is required");
            return v;
        }

        public long GetLong(string name, long def)
        {
            string v;
            if (!_values.TryGetValue(name, out v)) return def;
            long r;
            if (!long.TryParse(v, NumberStyles.Integer, CultureInfo.InvariantCulture, out r)) throw new ArgumentException("option --" + name + ": not an integer: " + v);
            return r;
        }

        public double GetDouble(string name, double def)
        {
            string v;
            if (!_values.TryGetValue(name, out v)) return def;
            double r;
            if (!double.TryParse(v, NumberStyles.Float, CultureInfo.InvariantCulture, out r)) throw new ArgumentException("option --" + name + ": not a number: " + v);
            return r;
        }

        public static Protocol ParseProtocol(string s)
        {
            if (s == "standard") return Protocol.Standard;
            if (s == "length-field") return Protocol.LengthField;
            throw new ArgumentException("unknown protocol '" + s + "' (standard|length-field)");
        }

        /// <summary>Parses HOST:PORT ([v6]:port accepted).</summary>
        public static IPEndPoint ParseEndPoint(string s)
        {
            int colon = s.LastIndexOf(':');
            if (colon <= 0) throw new ArgumentException("expected HOST:PORT, got '" + s + "'");
            string host = s.Substring(0, colon).Trim('[', ']');
            int port = int.Parse(s.Substring(colon + 1), CultureInfo.InvariantCulture);
            IPAddress addr;
            if (!IPAddress.TryParse(host, out addr))
            {
                IPAddress[] all = Dns.GetHostAddresses(host);
                if (all.Length == 0) throw new ArgumentException("cannot resolve " + host);
                addr = all[0];
                foreach (IPAddress a in all) if (a.AddressFamily == System.Net.Sockets.AddressFamily.InterNetwork) { addr = a; break; }
            }
            return new IPEndPoint(addr, port);
        }

        public static string Json(string s)
        {
            var sb = new System.Text.StringBuilder("\"");
            foreach (char c in s)
            {
                if (c == '"' || c == '\\') sb.Append('\\').Append(c);
                else if (c < 0x20) sb.Append("\\u").Append(((int)c).ToString("x4"));
                else sb.Append(c);
            }
            return sb.Append('"').ToString();
        }
    }
}
