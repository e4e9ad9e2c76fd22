using System;
using System.Collections.Concurrent;
using System.Collections.Generic;
using System.Globalization;
using System.Text;
using System.Threading;
using Frameproof.Codec;

namespace Frameproof.Discovery
{
    /// <summary>Result codes (DISC-ERR-1): upstream's DiscoveryError::Code, plus INVALID_ARGUMENT.</summary>
    public enum DiscoveryCode { Ok = 0, NotFound = 1, ConnectionError = 2, LockTimeout = 3, InternalError = 4, InvalidArgument = 5 }

    /// <summary>Event types (upstream's ServiceEventType; the numbers of the testee protocol).</summary>
    public enum ServiceEventType { Added = 1, Removed = 2, Updated = 3 }

    /// <summary>One instance of a service (DISC-EP-1): immutable.</summary>
    public sealed class ServiceEndpoint
    {
        public const uint DefaultWeight = 100;
        public readonly string Service, InstanceId, Host;
        public readonly uint Port, Weight;

        public ServiceEndpoint(string service, string instanceId, string host, uint port, uint weight = DefaultWeight)
        {
            Service = service ?? ""; InstanceId = instanceId ?? ""; Host = host ?? ""; Port = port; Weight = weight;
        }

        /// <summary>A service or instance name (DISC-EP-2): non-empty, at most 255 bytes of UTF-8, no '/'.</summary>
        public static bool NameOk(string s)
        {
            return !string.IsNullOrEmpty(s) && s.IndexOf('/') < 0 && Encoding.UTF8.GetByteCount(s) <= 255;
        }

        /// <summary>DISC-EP-2 for all five fields.</summary>
        public bool Valid
        {
            get
            {
                return NameOk(Service) && NameOk(InstanceId) && Host.Length > 0 && Encoding.UTF8.GetByteCount(Host) <= 255 && Port <= 65535;
            }
        }

        public override string ToString() { return Service + "/" + InstanceId + "@" + Host + ":" + Port + " w" + Weight; }
    }

    /// <summary>A service's instances at one moment (DISC-REG-5): a read-only snapshot that later
    /// operations do not change. Allocation-free to obtain (the registry replaces, never changes, the
    /// arrays it hands out).</summary>
    public struct EndpointList
    {
        readonly ServiceEndpoint[] _items;
        internal EndpointList(ServiceEndpoint[] items) { _items = items; }
        public int Count { get { return _items == null ? 0 : _items.Length; } }
        public ServiceEndpoint this[int i] { get { return _items[i]; } }
        public ServiceEndpoint[] ToArray() { return _items == null ? new ServiceEndpoint[0] : (ServiceEndpoint[])_items.Clone(); }
    }

    /// <summary>
    /// The in-process service registry (spec/discovery.md), safe to share between threads
    /// (DISC-THREAD-1). Writes (register, deregister, watch, unwatch) take one lock for their
    /// bookkeeping; each service's list is an immutable array replaced on every change
    /// (copy-on-write), published in a concurrent map, so <see cref="Discover"/> and the selectors
    /// read without the lock and without allocating. Events are queued under the lock and delivered
    /// outside it, in queue order, by one thread at a time (DISC-WATCH-2..4): the thread of the
    /// operation that caused them, or a thread delivering earlier ones at that moment; an operation
    /// called from inside a callback returns at once and its events follow the current callback.
    /// </summary>
    public sealed class ServiceRegistry : IServiceRegistry
    {
        sealed class Entry
        {
            public ServiceEndpoint[] All;       // list order (DISC-REG-1/2)
            public ServiceEndpoint[] Eligible;  // weight > 0, list order (DISC-SEL-1)
            public ulong TotalWeight;           // of Eligible
            public long[] Watchers = NoHandles; // handles, in the order their watch completed
        }

        sealed class Watcher
        {
            public string Service;
            public Action<ServiceEventType, ServiceEndpoint> Callback;
        }

        struct PendingEvent
        {
            public ServiceEventType Type;
            public ServiceEndpoint Endpoint;
            public long[] Handles;
        }

        static readonly long[] NoHandles = new long[0];
        static readonly ServiceEndpoint[] None = new ServiceEndpoint[0];

        readonly object _lock = new object();
        readonly ConcurrentDictionary<string, Entry> _services = new ConcurrentDictionary<string, Entry>(StringComparer.Ordinal);
        readonly Dictionary<long, Watcher> _watchers = new Dictionary<long, Watcher>();
        readonly Queue<PendingEvent> _queue = new Queue<PendingEvent>();
        readonly ThreadLocal<bool> _delivering = new ThreadLocal<bool>();
        long _nextHandle = 1;
        int _dispatching;
        int _callingThread;
        long _callingHandle;

        // ---------------------------------------------------------------- operations

        /// <summary>DISC-REG-1 (new: appended, ADDED) and DISC-REG-2 (existing: replaced in place, UPDATED).</summary>
        public DiscoveryCode Register(ServiceEndpoint e)
        {
            if (e == null || !e.Valid) return DiscoveryCode.InvalidArgument;
            bool queued;
            lock (_lock)
            {
                Entry old;
                _services.TryGetValue(e.Service, out old);
                ServiceEndpoint[] all = old == null ? None : old.All;
                int at = IndexOf(all, e.InstanceId);
                ServiceEndpoint[] next;
                if (at >= 0)
                {
                    next = (ServiceEndpoint[])all.Clone();
                    next[at] = e;
                }
                else
                {
                    next = new ServiceEndpoint[all.Length + 1];
                    Array.Copy(all, next, all.Length);
                    next[all.Length] = e;
                }
                Entry ne = Publish(e.Service, next, old);
                queued = Emit(ne, at >= 0 ? ServiceEventType.Updated : ServiceEventType.Added, e);
            }
            if (queued) Deliver();
            return DiscoveryCode.Ok;
        }

        /// <summary>DISC-REG-3 (removed, REMOVED with the stored endpoint) and DISC-REG-4 (missing: NOT_FOUND).</summary>
        public DiscoveryCode Deregister(string service, string instanceId)
        {
            if (!ServiceEndpoint.NameOk(service) || !ServiceEndpoint.NameOk(instanceId)) return DiscoveryCode.InvalidArgument;
            bool queued;
            lock (_lock)
            {
                Entry old;
                if (!_services.TryGetValue(service, out old)) return DiscoveryCode.NotFound;
                int at = IndexOf(old.All, instanceId);
                if (at < 0) return DiscoveryCode.NotFound;
                ServiceEndpoint gone = old.All[at];
                var next = new ServiceEndpoint[old.All.Length - 1];
                Array.Copy(old.All, 0, next, 0, at);
                Array.Copy(old.All, at + 1, next, at, next.Length - at);
                Entry ne = Publish(service, next, old);
                queued = Emit(ne, ServiceEventType.Removed, gone);
            }
            if (queued) Deliver();
            return DiscoveryCode.Ok;
        }

        /// <summary>DISC-REG-5: the list in order; an unknown service is OK and empty.</summary>
        public DiscoveryCode Discover(string service, out EndpointList list)
        {
            list = default(EndpointList);
            if (!ServiceEndpoint.NameOk(service)) return DiscoveryCode.InvalidArgument;
            Entry e;
            if (_services.TryGetValue(service, out e)) list = new EndpointList(e.All);
            return DiscoveryCode.Ok;
        }

        /// <summary>The eligible instances and their total weight (the selectors' read, DISC-SEL-1).</summary>
        internal ServiceEndpoint[] Eligible(string service, out ulong totalWeight)
        {
            Entry e;
            if (!_services.TryGetValue(service, out e)) { totalWeight = 0; return None; }
            totalWeight = e.TotalWeight;
            return e.Eligible;
        }

        /// <summary>DISC-WATCH-1/5: subscribes; the handle is never reused.</summary>
        public DiscoveryCode Watch(string service, Action<ServiceEventType, ServiceEndpoint> callback, out long handle)
        {
            handle = 0;
            if (!ServiceEndpoint.NameOk(service) || callback == null) return DiscoveryCode.InvalidArgument;
            lock (_lock)
            {
                handle = _nextHandle++;
                _watchers.Add(handle, new Watcher { Service = service, Callback = callback });
                Entry old;
                _services.TryGetValue(service, out old);
                long[] hs = old == null ? NoHandles : old.Watchers;
                var nh = new long[hs.Length + 1];
                Array.Copy(hs, nh, hs.Length);
                nh[hs.Length] = handle;
                Entry ne = Publish(service, old == null ? None : old.All, old);
                ne.Watchers = nh;
            }
            return DiscoveryCode.Ok;
        }

        /// <summary>DISC-WATCH-5: once this returns the callback is not called again (a call in
        /// progress on another thread is waited for; from inside its own callback, no wait).</summary>
        public DiscoveryCode Unwatch(long handle)
        {
            lock (_lock)
            {
                Watcher w;
                if (!_watchers.TryGetValue(handle, out w)) return DiscoveryCode.NotFound;
                _watchers.Remove(handle);
                Entry old;
                if (_services.TryGetValue(w.Service, out old))
                {
                    long[] hs = old.Watchers;
                    var nh = new long[hs.Length - 1];
                    for (int i = 0, j = 0; i < hs.Length; i++) if (hs[i] != handle) nh[j++] = hs[i];
                    Entry ne = Publish(w.Service, old.All, old);
                    ne.Watchers = nh;
                }
                int me = Thread.CurrentThread.ManagedThreadId;
                while (_callingHandle == handle && _callingThread != me) Monitor.Wait(_lock, 1000);
            }
            return DiscoveryCode.Ok;
        }

        // ---------------------------------------------------------------- internals (under _lock)

        static int IndexOf(ServiceEndpoint[] all, string id)
        {
            for (int i = 0; i < all.Length; i++) if (string.Equals(all[i].InstanceId, id, StringComparison.Ordinal)) return i;
            return -1;
        }

        Entry Publish(string service, ServiceEndpoint[] all, Entry old)
        {
            var e = new Entry { All = all, Watchers = old == null ? NoHandles : old.Watchers };
            int n = 0;
            ulong total = 0;
            foreach (ServiceEndpoint x in all) if (x.Weight > 0) { n++; total += x.Weight; }
            if (n == all.Length) e.Eligible = all;
            else
            {
                e.Eligible = new ServiceEndpoint[n];
                n = 0;
                foreach (ServiceEndpoint x in all) if (x.Weight > 0) e.Eligible[n++] = x;
            }
            e.TotalWeight = total;
            _services[service] = e;
            return e;
        }

        bool Emit(Entry e, ServiceEventType type, ServiceEndpoint ep)
        {
            if (e.Watchers.Length == 0) return false;
            _queue.Enqueue(new PendingEvent { Type = type, Endpoint = ep, Handles = e.Watchers });
            return true;
        }

        /// <summary>Delivers the queued events (DISC-WATCH-2..4). Called after every operation that
        /// queued one; from inside a callback it returns at once (the loop further up the stack goes on).</summary>
        public void Deliver()
        {
            if (_delivering.Value) return;
            while (true)
            {
                if (Interlocked.CompareExchange(ref _dispatching, 1, 0) != 0) return; // another thread delivers; it re-checks the queue
                try
                {
                    _delivering.Value = true;
                    int me = Thread.CurrentThread.ManagedThreadId;
                    while (true)
                    {
                        PendingEvent ev;
                        lock (_lock)
                        {
                            if (_queue.Count == 0) break;
                            ev = _queue.Dequeue();
                        }
                        foreach (long h in ev.Handles)
                        {
                            Watcher w;
                            lock (_lock)
                            {
                                if (!_watchers.TryGetValue(h, out w)) continue; // unwatched meanwhile
                                _callingThread = me;
                                _callingHandle = h;
                            }
                            try { w.Callback(ev.Type, ev.Endpoint); }
                            catch (Exception) { }   // a failing callback does not stop the others
                            finally
                            {
                                lock (_lock)
                                {
                                    _callingHandle = 0;
                                    Monitor.PulseAll(_lock);
                                }
                            }
                        }
                    }
                }
                finally
                {
                    _delivering.Value = false;
                    Volatile.Write(ref _dispatching, 0);
                }
                lock (_lock) { if (_queue.Count == 0) return; }
            }
        }
    }

    /// <summary>
    /// A selector of one service (spec/discovery.md §6): round-robin (DISC-SEL-2), smooth weighted
    /// round-robin (DISC-SEL-3), random and weighted random (DISC-SEL-4) seeded with a 64-bit seed
    /// (DISC-SEL-5: SplitMix64, unbiased by rejection). Safe to share between threads: round-robin
    /// takes one interlocked increment, the others a lock of their own (DISC-THREAD-2). On the
    /// in-process <see cref="ServiceRegistry"/> a pick reads its published list without allocating;
    /// on any other <see cref="IServiceRegistry"/> (etcd, §8) each pick is one <c>Discover</c>, whose
    /// failure code (CONNECTION_ERROR) the pick answers.
    /// </summary>
    public sealed class Selector
    {
        public static readonly string[] Names = { "round-robin", "weighted-round-robin", "random", "weighted-random" };
        enum Kind { RoundRobin, WeightedRoundRobin, Random, WeightedRandom }

        readonly IServiceRegistry _registry;
        readonly string _service;
        readonly Kind _kind;
        readonly object _lock = new object();
        long _counter = -1;
        ulong _state;
        Dictionary<string, long> _current;

        Selector(IServiceRegistry registry, string service, Kind kind, ulong seed)
        {
            _registry = registry; _service = service; _kind = kind; _state = seed;
            if (kind == Kind.WeightedRoundRobin) _current = new Dictionary<string, long>(StringComparer.Ordinal);
        }

        /// <summary>A selector by name (DISC-SEL-6); a null seed draws one from the OS (DISC-SEL-5).</summary>
        public static DiscoveryCode Create(IServiceRegistry registry, string service, string name, ulong? seed, out Selector selector)
        {
            selector = null;
            int k = Array.IndexOf(Names, name);
            if (k < 0 || !ServiceEndpoint.NameOk(service)) return DiscoveryCode.InvalidArgument;
            ulong s;
            if (seed.HasValue) s = seed.Value;
            else
            {
                var b = new byte[8];
                using (var rng = System.Security.Cryptography.RandomNumberGenerator.Create()) rng.GetBytes(b);
                s = BitConverter.ToUInt64(b, 0);
            }
            selector = new Selector(registry, service, (Kind)k, s);
            return DiscoveryCode.Ok;
        }

        /// <summary>One pick; NOT_FOUND when no instance is eligible (the state does not change).</summary>
        public DiscoveryCode Select(out ServiceEndpoint picked)
        {
            picked = null;
            ulong total;
            ServiceEndpoint[] el;
            var local = _registry as ServiceRegistry;
            if (local != null) el = local.Eligible(_service, out total);
            else
            {
                DiscoveryCode c = EligibleOf(_registry, _service, out el, out total);
                if (c != DiscoveryCode.Ok) return c;
            }
            if (el.Length == 0) return DiscoveryCode.NotFound;
            switch (_kind)
            {
                case Kind.RoundRobin:
                    picked = el[(int)((ulong)Interlocked.Increment(ref _counter) % (ulong)el.Length)];
                    break;
                case Kind.WeightedRoundRobin:
                    lock (_lock) picked = Smooth(el, total);
                    break;
                case Kind.Random:
                    lock (_lock) picked = el[(int)Below((ulong)el.Length)];
                    break;
                default:
                    ulong x;
                    lock (_lock) x = Below(total);
                    foreach (ServiceEndpoint e in el)
                    {
                        if (x < e.Weight) { picked = e; break; }
                        x -= e.Weight;
                    }
                    break;
            }
            return DiscoveryCode.Ok;
        }

        /// <summary>The eligible instances (weight > 0, list order) of a registry other than the
        /// in-process one, read with one Discover.</summary>
        static DiscoveryCode EligibleOf(IServiceRegistry registry, string service, out ServiceEndpoint[] eligible, out ulong total)
        {
            eligible = None; total = 0;
            EndpointList list;
            DiscoveryCode c = registry.Discover(service, out list);
            if (c != DiscoveryCode.Ok) return c;
            var el = new List<ServiceEndpoint>(list.Count);
            for (int i = 0; i < list.Count; i++) if (list[i].Weight > 0) { el.Add(list[i]); total += list[i].Weight; }
            eligible = el.ToArray();
            return DiscoveryCode.Ok;
        }

        static readonly ServiceEndpoint[] None = new ServiceEndpoint[0];

        /// <summary>nginx's smooth weighted round-robin; instances no longer eligible lose their
        /// current weight; exact 64-bit arithmetic (|current| ≤ total ≤ n·2^32).</summary>
        ServiceEndpoint Smooth(ServiceEndpoint[] el, ulong total)
        {
            if (_current.Count > 0)
            {
                List<string> drop = null;
                foreach (string id in _current.Keys)
                {
                    bool found = false;
                    foreach (ServiceEndpoint e in el) if (string.Equals(e.InstanceId, id, StringComparison.Ordinal)) { found = true; break; }
                    if (!found) (drop ?? (drop = new List<string>())).Add(id);
                }
                if (drop != null) foreach (string id in drop) _current.Remove(id);
            }
            ServiceEndpoint best = null;
            long bestW = 0;
            foreach (ServiceEndpoint e in el)
            {
                long cw;
                _current.TryGetValue(e.InstanceId, out cw);
                cw += e.Weight;
                _current[e.InstanceId] = cw;
                if (best == null || cw > bestW) { best = e; bestW = cw; }
            }
            _current[best.InstanceId] = bestW - (long)total;
            return best;
        }

        ulong Next()
        {
            ulong z = (_state += 0x9E3779B97F4A7C15UL);
            z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9UL;
            z = (z ^ (z >> 27)) * 0x94D049BB133111EBUL;
            return z ^ (z >> 31);
        }

        /// <summary>Uniform in [0, n), n ≥ 1, without modulo bias (rejection of the top remainder).</summary>
        ulong Below(ulong n)
        {
            ulong limit = ulong.MaxValue - (ulong.MaxValue % n + 1) % n;   // largest multiple of n, minus 1
            while (true)
            {
                ulong x = Next();
                if (x <= limit) return x % n;
            }
        }
    }

    /// <summary>The etcd mapping, offline (DISC-ETCD-1..3): key and value of an endpoint, and the
    /// reading of one stored entry.</summary>
    public static class EtcdMapping
    {
        public const string DefaultPrefix = "frameproof/services";
        static readonly UTF8Encoding StrictUtf8 = new UTF8Encoding(false, true);

        public static bool PrefixOk(string p) { return !string.IsNullOrEmpty(p) && p[0] != '/' && p[p.Length - 1] != '/'; }

        /// <summary>DISC-ETCD-1/2: "/prefix/service/instance" and the five members, in order, no whitespace.</summary>
        public static DiscoveryCode Encode(string prefix, ServiceEndpoint e, out byte[] key, out byte[] value)
        {
            key = value = null;
            if (!PrefixOk(prefix) || e == null || !e.Valid) return DiscoveryCode.InvalidArgument;
            key = Encoding.UTF8.GetBytes("/" + prefix + "/" + e.Service + "/" + e.InstanceId);
            var sb = new StringBuilder(96);
            sb.Append("{\"service\":"); Quote(sb, e.Service);
            sb.Append(",\"instance_id\":"); Quote(sb, e.InstanceId);
            sb.Append(",\"host\":"); Quote(sb, e.Host);
            sb.Append(",\"port\":").Append(e.Port.ToString(CultureInfo.InvariantCulture));
            sb.Append(",\"weight\":").Append(e.Weight.ToString(CultureInfo.InvariantCulture)).Append('}');
            value = Encoding.UTF8.GetBytes(sb.ToString());
            return DiscoveryCode.Ok;
        }

        /// <summary>A JSON string as Python's json.dumps(ensure_ascii=False) writes it: ", \ and the
        /// control characters escaped, everything else as UTF-8.</summary>
        static void Quote(StringBuilder sb, string s)
        {
            sb.Append('"');
            foreach (char c in s)
            {
                switch (c)
                {
                    case '"': sb.Append("\\\""); break;
                    case '\\': sb.Append("\\\\"); break;
                    case '\n': sb.Append("\\n"); break;
                    case '\r': sb.Append("\\r"); break;
                    case '\t': sb.Append("\\t"); break;
                    case '\b': sb.Append("\\b"); break;
                    case '\f': sb.Append("\\f"); break;
                    default:
                        if (c < 0x20) sb.Append("\\u").Append(((int)c).ToString("x4"));
                        else sb.Append(c);
                        break;
                }
            }
            sb.Append('"');
        }

        /// <summary>DISC-ETCD-3: reads one entry as a registry reading etcd would; INVALID_ARGUMENT for
        /// an entry it skips. Unknown members are ignored, a missing weight is 100.</summary>
        public static DiscoveryCode Decode(string prefix, byte[] key, byte[] value, out ServiceEndpoint e)
        {
            e = null;
            if (!PrefixOk(prefix) || key == null || value == null) return DiscoveryCode.InvalidArgument;
            string k, v;
            JsonValue doc;
            try
            {
                k = StrictUtf8.GetString(key);
                v = StrictUtf8.GetString(value);
                doc = JsonValue.Parse(v);
            }
            catch (Exception) { return DiscoveryCode.InvalidArgument; }   // not UTF-8, not JSON (a duplicate member included)
            string head = "/" + prefix + "/";
            if (!k.StartsWith(head, StringComparison.Ordinal) || doc.Kind != JsonKind.Object) return DiscoveryCode.InvalidArgument;
            string[] seg = k.Substring(head.Length).Split('/');
            string service = null, id = null, host = null;
            long port = -1, weight = ServiceEndpoint.DefaultWeight;
            bool havePort = false;
            foreach (KeyValuePair<string, JsonValue> m in doc.Members)
            {
                switch (m.Key)
                {
                    case "service": if (m.Value.Kind != JsonKind.String) return DiscoveryCode.InvalidArgument; service = m.Value.Text; break;
                    case "instance_id": if (m.Value.Kind != JsonKind.String) return DiscoveryCode.InvalidArgument; id = m.Value.Text; break;
                    case "host": if (m.Value.Kind != JsonKind.String) return DiscoveryCode.InvalidArgument; host = m.Value.Text; break;
                    case "port": if (!Integer(m.Value, out port)) return DiscoveryCode.InvalidArgument; havePort = true; break;
                    case "weight": if (!Integer(m.Value, out weight)) return DiscoveryCode.InvalidArgument; break;
                }
            }
            if (service == null || id == null || host == null || !havePort) return DiscoveryCode.InvalidArgument;
            if (port < 0 || port > 65535 || weight < 0 || weight > uint.MaxValue) return DiscoveryCode.InvalidArgument;
            var ep = new ServiceEndpoint(service, id, host, (uint)port, (uint)weight);
            if (seg.Length != 2 || seg[0] != service || seg[1] != id || !ep.Valid) return DiscoveryCode.InvalidArgument;
            e = ep;
            return DiscoveryCode.Ok;
        }

        /// <summary>A JSON integer (no fraction, no exponent) within a long.</summary>
        static bool Integer(JsonValue v, out long x)
        {
            x = 0;
            if (v.Kind != JsonKind.Number || v.Text.IndexOfAny(new[] { '.', 'e', 'E' }) >= 0) return false;
            return long.TryParse(v.Text, NumberStyles.AllowLeadingSign, CultureInfo.InvariantCulture, out x);
        }
    }
}
