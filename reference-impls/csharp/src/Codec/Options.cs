using System;
using System.Collections.Generic;
using System.Globalization;
using System.Net;

namespace Frameproof.Codec
{
    /// <summary>A usage error: the program prints "usage error: ..." and its usage, and exits 2.</summary>
    public sealed class UsageException : Exception
    {
        public UsageException(string message) : base(message) { }
    }

    /// <summary>"--name value" / "--name=value" / "--flag" command-line parsing shared by the programs.
    /// Unknown options, missing values and bad numbers throw <see cref="UsageException"/>.</summary>
    public sealed class Options
    {
        readonly Dictionary<string, string> _values = new Dictionary<string, string>();
        readonly HashSet<string> _flags = new HashSet<string>();

        /// <summary><paramref name="flagNames"/> take no value, <paramref name="valueNames"/> take one.</summary>
        public Options(string[] args, ICollection<string> flagNames, ICollection<string> valueNames)
        {
            for (int i = 0; i < args.Length; i++)
            {
                string a = args[i];
                if (!a.StartsWith("--", StringComparison.Ordinal)) throw new UsageException("unexpected argument '" + a + "'");
                int eq = a.IndexOf('=');
                string name = eq > 0 ? a.Substring(2, eq - 2) : a.Substring(2);
                if (flagNames.Contains(name))
                {
                    if (eq > 0) throw new UsageException("option --" + name + " takes no value");
                    _flags.Add(name);
                    continue;
                }
                if (!valueNames.Contains(name)) throw new UsageException("unknown option --" + name);
                if (_values.ContainsKey(name)) throw new UsageException("option --" + name + " given twice");
                if (eq > 0) { _values[name] = a.Substring(eq + 1); continue; }
                if (i + 1 >= args.Length) throw new UsageException("option --" + name + " needs a value");
                _values[name] = args[++i];
            }
        }

        /// <summary>True if the arguments ask for help (printed to stdout, exit 0).</summary>
        public static bool WantsHelp(string[] args)
        {
            foreach (string a in args) if (a == "--help" || a == "-h") return true;
            return false;
        }

        /// <summary>Reports a usage error (one "usage error:" line, then the usage, on stderr); returns 2.</summary>
        public static int UsageError(Exception e, string usage)
        {
            Console.Error.WriteLine("usage error: " + e.Message);
            Console.Error.WriteLine(usage);
            return 2;
        }

        /// <summary>The codec of --codec JSON or --protocol NAME (exactly one of the two).</summary>
        public CodecSpec Codec()
        {
            bool c = _values.ContainsKey("codec"), p = _values.ContainsKey("protocol");
            if (c && p) throw new UsageException("give one of --codec and --protocol, not both");
            if (!c && !p) throw new UsageException("--codec JSON or --protocol NAME is required");
            try { return c ? CodecJson.Parse(_values["codec"]) : CodecJson.FromName(_values["protocol"]); }
            catch (FormatException e) { throw new UsageException((c ? "--codec: " : "--protocol: ") + e.Message); }
        }

        /// <summary>A usable codec for the programs: registered, valid configuration, encodable.</summary>
        public FrameCodec CreateCodec()
        {
            FrameCodec codec = Registry.Create(Codec());
            if (codec.ConfigError.IsSet) throw new UsageException("--codec: " + codec.ConfigError);
            if (codec.EncoderUnsupported != null) throw new UsageException("--codec: " + codec.EncoderUnsupported);
            return codec;
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
            if (!_values.TryGetValue(name, out v)) throw new UsageException("option --" + name + " is required");
            return v;
        }

        delegate bool Parser<TValue>(string s, NumberStyles style, IFormatProvider provider, out TValue value);

        TValue GetNumber<TValue>(string name, TValue def, Parser<TValue> parse, NumberStyles style, string what)
        {
            string v;
            if (!_values.TryGetValue(name, out v)) return def;
            TValue r;
            if (!parse(v, style, CultureInfo.InvariantCulture, out r)) throw new UsageException("option --" + name + ": not " + what + ": " + v);
            return r;
        }

        public long GetLong(string name, long def) { return GetNumber<long>(name, def, long.TryParse, NumberStyles.Integer, "an integer"); }

        public double GetDouble(string name, double def) { return GetNumber<double>(name, def, double.TryParse, NumberStyles.Float, "a number"); }

        /// <summary>Parses HOST:PORT ([v6]:port accepted).</summary>
        public static IPEndPoint ParseEndPoint(string s)
        {
            int colon = s.LastIndexOf(':');
            if (colon <= 0) throw new UsageException("expected HOST:PORT, got '" + s + "'");
            string host = s.Substring(0, colon).Trim('[', ']');
            int port;
            if (!int.TryParse(s.Substring(colon + 1), NumberStyles.None, CultureInfo.InvariantCulture, out port) || port > 65535)
                throw new UsageException("bad port in '" + s + "'");
            IPAddress addr;
            if (!IPAddress.TryParse(host, out addr))
            {
                IPAddress[] all;
                try { all = Dns.GetHostAddresses(host); }
                catch (Exception e) { throw new UsageException("cannot resolve " + host + ": " + e.Message); }
                if (all.Length == 0) throw new UsageException("cannot resolve " + host);
                addr = all[0];
                foreach (IPAddress a in all) if (a.AddressFamily == System.Net.Sockets.AddressFamily.InterNetwork) { addr = a; break; }
            }
            return new IPEndPoint(addr, port);
        }
    }
}
