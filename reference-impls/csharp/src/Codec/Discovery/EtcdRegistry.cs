using System;
using System.Collections.Generic;
using System.Text;
using System.Threading;
using Frameproof.Codec;

namespace Frameproof.Discovery
{
    /// <summary>
    /// The registry of spec/discovery.md on etcd (§8), over etcd's v3 JSON gateway
    /// (<see cref="EtcdGateway"/>): keys <c>/&lt;prefix&gt;/&lt;service&gt;/&lt;instance_id&gt;</c> holding
    /// the endpoint's JSON (<see cref="EtcdMapping"/>, DISC-ETCD-1..3); <see cref="Discover"/> one
    /// linearizable range read sorted by create revision (DISC-ETCD-4); one lease per registry,
    /// granted on the first register and kept alive every third of its TTL (DISC-ETCD-5); one etcd
    /// watch with previous values per watcher (DISC-ETCD-6); CONNECTION_ERROR within the request
    /// timeout when etcd cannot be reached, and recovery when it comes back: a lost lease replaced
    /// and this registry's instances written again under the new one, watches resumed at the
    /// revision after the last one delivered, or after a compaction the difference between the
    /// last list a watcher saw and the current one (DISC-ETCD-7).
    ///
    /// Threads: operations block the caller (one HTTP exchange each, bounded by the request
    /// timeout); one keep-alive thread; one thread per watch reading its stream; one delivery
    /// thread calling the callbacks, one at a time, each watcher's events in etcd's order. An event
    /// may arrive after the operation that caused it returned (DISC-ETCD-6); <see cref="Deliver"/>
    /// waits for this registry's own writes to reach its watchers.
    /// <see cref="Dispose"/> revokes the lease (the instances go); <see cref="Close"/> with
    /// <c>abandon</c> leaves them to expire, as a crashed process would.
    /// </summary>
    public sealed class EtcdRegistry : IServiceRegistry, IDisposable
    {
        public const int DefaultLeaseTtlSeconds = 10;
        public static readonly TimeSpan DefaultRequestTimeout = TimeSpan.FromSeconds(5);

        sealed class WatchState
        {
            public string Service;
            public Action<ServiceEventType, ServiceEndpoint> Callback;
            public volatile bool Active = true;
            public long Next;            // the revision the stream (re)starts at
            public long Seen;            // the last revision this watcher was told about (or skipped)
            public long Since;           // the store's revision when the watch began
            public Dictionary<string, ServiceEndpoint> Known;   // the watcher's view (compaction resync)
            public EtcdHttpConnection Conn;
        }

        struct Pending
        {
            public long Handle;
            public ServiceEventType Type;
            public ServiceEndpoint Endpoint;
        }

        readonly EtcdGateway _gw;
        readonly string _prefix;
        readonly int _ttl;
        readonly TimeSpan _timeout;

        readonly object _lock = new object();
        readonly object _leaseLock = new object();    // one lease grant at a time
        long _lease;                                  // 0: none yet
        volatile bool _rewrite;                       // a renewal could not write all of ours again
        readonly Dictionary<string, ServiceEndpoint> _mine = new Dictionary<string, ServiceEndpoint>(StringComparer.Ordinal);
        readonly Dictionary<long, WatchState> _watchers = new Dictionary<long, WatchState>();
        readonly Dictionary<string, long> _written = new Dictionary<string, long>(StringComparer.Ordinal);
        readonly Queue<Pending> _queue = new Queue<Pending>();
        long _nextHandle = 1;
        bool _closed;
        long _callingHandle;
        int _callingThread;

        readonly ManualResetEvent _stop = new ManualResetEvent(false);
        Thread _keepAlive;
        readonly Thread _dispatcher;

        /// <param name="endpoint">"host:port" of etcd's client URL (plain HTTP).</param>
        /// <param name="prefix">DISC-ETCD-1 (default frameproof/services).</param>
        /// <param name="leaseTtlSeconds">DISC-ETCD-5; 0 = 10 s.</param>
        /// <param name="requestTimeout">DISC-ETCD-7; zero = 5 s.</param>
        /// <exception cref="ArgumentException">a prefix DISC-ETCD-1 rejects, or an endpoint that is not host:port</exception>
        public EtcdRegistry(string endpoint, string prefix = EtcdMapping.DefaultPrefix, int leaseTtlSeconds = 0, TimeSpan requestTimeout = default(TimeSpan))
        {
            if (!EtcdMapping.PrefixOk(prefix)) throw new ArgumentException("etcd prefix '" + prefix + "' breaks DISC-ETCD-1");
            _gw = new EtcdGateway(endpoint);
            _prefix = prefix;
            _ttl = leaseTtlSeconds > 0 ? leaseTtlSeconds : DefaultLeaseTtlSeconds;
            _timeout = requestTimeout > TimeSpan.Zero ? requestTimeout : DefaultRequestTimeout;
            _dispatcher = new Thread(Dispatch) { IsBackground = true, Name = "fp-etcd-events" };
            _dispatcher.Start();
        }

        public string Prefix { get { return _prefix; } }
        public int LeaseTtlSeconds { get { return _ttl; } }
        public TimeSpan RequestTimeout { get { return _timeout; } }
        /// <summary>The current lease (0 before the first register); for tests and diagnostics.</summary>
        public long Lease { get { return Interlocked.Read(ref _lease); } }

        byte[] Key(string service, string instanceId)
        {
            return Encoding.UTF8.GetBytes("/" + _prefix + "/" + service + "/" + instanceId);
        }

        static string MineKey(string service, string instanceId) { return service + "/" + instanceId; }   // names hold no '/'

        // ---------------------------------------------------------------- the lease (DISC-ETCD-5/7)

        /// <summary>The lease, granted if there is none or if <paramref name="stale"/> (non-zero) is
        /// still the current one (then etcd no longer knows it).</summary>
        long LeaseFor(long stale, long deadline)
        {
            bool granted;
            return LeaseFor(stale, deadline, out granted);
        }

        long LeaseFor(long stale, long deadline, out bool granted)
        {
            granted = false;
            // another thread granting (etcd slow or away) is waited for only until our own deadline
            if (!Monitor.TryEnter(_leaseLock, Math.Max(0, EtcdHttpConnection.Left(deadline))))
                throw new EtcdUnreachableException("/v3/lease/grant: no lease in time");
            try
            {
                if (_lease != 0 && _lease != stale) return _lease;
                JsonValue d = _gw.Post("/v3/lease/grant", "{\"TTL\":\"" + EtcdGateway.Str(_ttl) + "\"}", deadline);
                long id = EtcdGateway.Int64(d, "ID");
                if (id == 0) throw new EtcdUnreachableException("/v3/lease/grant: no lease ID in the answer");
                Interlocked.Exchange(ref _lease, id);
                granted = true;
                if (_keepAlive == null && !_stop.WaitOne(0))
                {
                    _keepAlive = new Thread(KeepAlive) { IsBackground = true, Name = "fp-etcd-keepalive" };
                    _keepAlive.Start();
                }
                return id;
            }
            finally { Monitor.Exit(_leaseLock); }
        }

        /// <summary>A new lease in place of <paramref name="stale"/>, and this registry's instances
        /// written again under it (DISC-ETCD-7). Answers the new lease.</summary>
        long Renew(long stale, long deadline)
        {
            bool granted;
            long lease = LeaseFor(stale, deadline, out granted);
            if (granted) WriteMineAgain(lease, deadline);   // this call granted it (not another renewal meanwhile)
            return lease;
        }

        /// <summary>This registry's instances put again under <paramref name="lease"/>; what fails is
        /// tried again after the next successful keep-alive.</summary>
        void WriteMineAgain(long lease, long deadline)
        {
            List<ServiceEndpoint> mine;
            lock (_lock) mine = new List<ServiceEndpoint>(_mine.Values);
            bool failed = false;
            foreach (ServiceEndpoint e in mine)
            {
                try { Put(e, lease, deadline); }
                catch (EtcdUnreachableException) { failed = true; }
            }
            _rewrite = failed;
        }

        void KeepAlive()
        {
            int period = Math.Max(200, _ttl * 1000 / 3);
            while (!_stop.WaitOne(period))
            {
                long lease = Lease;
                if (lease == 0) continue;
                try
                {
                    long deadline = EtcdGateway.Deadline(_timeout);
                    JsonValue d = _gw.Post("/v3/lease/keepalive", "{\"ID\":\"" + EtcdGateway.Str(lease) + "\"}", deadline);
                    if (_stop.WaitOne(0)) break;
                    // etcd answers TTL 0 (or an error object) for a lease it no longer knows
                    if (EtcdGateway.Int64(EtcdGateway.Member(d, "result"), "TTL") <= 0) Renew(lease, deadline);
                    else if (_rewrite) WriteMineAgain(lease, EtcdGateway.Deadline(_timeout));
                }
                catch (Exception) { }   // etcd away: try again next period
            }
        }

        long Put(ServiceEndpoint e, long lease, long deadline)
        {
            byte[] key, value;
            EtcdMapping.Encode(_prefix, e, out key, out value);
            JsonValue d = _gw.Post("/v3/kv/put", "{\"key\":\"" + EtcdGateway.B64(key) + "\",\"value\":\"" + EtcdGateway.B64(value) +
                                                 "\",\"lease\":\"" + EtcdGateway.Str(lease) + "\"}", deadline);
            return EtcdGateway.Revision(d);
        }

        void Wrote(string service, long revision)
        {
            long had;
            if (!_written.TryGetValue(service, out had) || revision > had) _written[service] = revision;
        }

        // ---------------------------------------------------------------- operations

        /// <summary>A put under this registry's lease, OK once etcd committed it (DISC-ETCD-4).</summary>
        public DiscoveryCode Register(ServiceEndpoint e)
        {
            if (e == null || !e.Valid) return DiscoveryCode.InvalidArgument;
            long deadline = EtcdGateway.Deadline(_timeout);
            long rev;
            try
            {
                long lease = LeaseFor(0, deadline);
                try { rev = Put(e, lease, deadline); }
                catch (EtcdUnreachableException x)
                {
                    if (!x.LeaseNotFound) throw;
                    lease = Renew(lease, deadline);   // the lease expired while etcd was away
                    rev = Put(e, lease, deadline);
                }
            }
            catch (EtcdUnreachableException) { return DiscoveryCode.ConnectionError; }
            lock (_lock)
            {
                _mine[MineKey(e.Service, e.InstanceId)] = e;
                Wrote(e.Service, rev);
            }
            return DiscoveryCode.Ok;
        }

        /// <summary>A delete of the key; NOT_FOUND when it removed nothing (DISC-ETCD-4).</summary>
        public DiscoveryCode Deregister(string service, string instanceId)
        {
            if (!ServiceEndpoint.NameOk(service) || !ServiceEndpoint.NameOk(instanceId)) return DiscoveryCode.InvalidArgument;
            JsonValue d;
            try { d = _gw.Post("/v3/kv/deleterange", "{\"key\":\"" + EtcdGateway.B64(Key(service, instanceId)) + "\"}", EtcdGateway.Deadline(_timeout)); }
            catch (EtcdUnreachableException) { return DiscoveryCode.ConnectionError; }
            long deleted = EtcdGateway.Int64(d, "deleted");
            lock (_lock)
            {
                _mine.Remove(MineKey(service, instanceId));
                if (deleted > 0) Wrote(service, EtcdGateway.Revision(d));
            }
            return deleted > 0 ? DiscoveryCode.Ok : DiscoveryCode.NotFound;
        }

        /// <summary>One range read sorted by create revision (DISC-ETCD-4); entries DISC-ETCD-3
        /// rejects are skipped.</summary>
        public DiscoveryCode Discover(string service, out EndpointList list)
        {
            list = default(EndpointList);
            if (!ServiceEndpoint.NameOk(service)) return DiscoveryCode.InvalidArgument;
            JsonValue d;
            try { d = _gw.RangePrefix(Key(service, ""), EtcdGateway.Deadline(_timeout)); }
            catch (EtcdUnreachableException) { return DiscoveryCode.ConnectionError; }
            list = new EndpointList(DecodeAll(service, d).ToArray());
            return DiscoveryCode.Ok;
        }

        List<ServiceEndpoint> DecodeAll(string service, JsonValue range)
        {
            var out_ = new List<ServiceEndpoint>();
            JsonValue kvs = EtcdGateway.Member(range, "kvs");
            if (kvs == null || kvs.Kind != JsonKind.Array) return out_;
            foreach (JsonValue kv in kvs.Items)
            {
                ServiceEndpoint e;
                if (Decode(EtcdGateway.Member(kv, "key"), EtcdGateway.Member(kv, "value"), out e) && e.Service == service) out_.Add(e);
            }
            return out_;
        }

        bool Decode(JsonValue key, JsonValue value, out ServiceEndpoint e)
        {
            e = null;
            try { return EtcdMapping.Decode(_prefix, EtcdGateway.UnB64(key), EtcdGateway.UnB64(value), out e) == DiscoveryCode.Ok; }
            catch (FormatException) { return false; }   // not base64
        }

        /// <summary>An etcd watch on the service's prefix from the store's current revision on (no
        /// replay), with previous values (DISC-ETCD-6).</summary>
        public DiscoveryCode Watch(string service, Action<ServiceEventType, ServiceEndpoint> callback, out long handle)
        {
            handle = 0;
            if (!ServiceEndpoint.NameOk(service) || callback == null) return DiscoveryCode.InvalidArgument;
            JsonValue d;
            try { d = _gw.RangePrefix(Key(service, ""), EtcdGateway.Deadline(_timeout)); }
            catch (EtcdUnreachableException) { return DiscoveryCode.ConnectionError; }
            return WatchFrom(service, callback, EtcdGateway.Revision(d) + 1, DecodeAll(service, d), out handle);
        }

        /// <summary>Watches <paramref name="service"/> from etcd revision <paramref name="start"/> on,
        /// the watcher having last seen <paramref name="known"/>: what <see cref="Watch"/> does with
        /// the current revision and list. A start revision etcd compacted away makes the watcher
        /// receive the difference from <paramref name="known"/> to the current list (DISC-ETCD-7).</summary>
        public DiscoveryCode WatchFrom(string service, Action<ServiceEventType, ServiceEndpoint> callback, long start, IEnumerable<ServiceEndpoint> known, out long handle)
        {
            handle = 0;
            if (!ServiceEndpoint.NameOk(service) || callback == null || start < 1) return DiscoveryCode.InvalidArgument;
            var k = new Dictionary<string, ServiceEndpoint>(StringComparer.Ordinal);
            if (known != null) foreach (ServiceEndpoint e in known) if (e != null && e.Service == service) k[e.InstanceId] = e;
            var w = new WatchState { Service = service, Callback = callback, Next = start, Seen = start - 1, Since = start - 1, Known = k };
            lock (_lock)
            {
                if (_closed) return DiscoveryCode.InternalError;
                handle = _nextHandle++;
                _watchers.Add(handle, w);
            }
            long h = handle;
            new Thread(() => WatchLoop(h, w)) { IsBackground = true, Name = "fp-etcd-watch-" + h }.Start();
            return DiscoveryCode.Ok;
        }

        /// <summary>DISC-WATCH-5: the stream is cut; once this returns the callback is not called
        /// again (a call in progress on the delivery thread is waited for, unless this is it).</summary>
        public DiscoveryCode Unwatch(long handle)
        {
            EtcdHttpConnection conn;
            lock (_lock)
            {
                WatchState w;
                if (!_watchers.TryGetValue(handle, out w)) return DiscoveryCode.NotFound;
                _watchers.Remove(handle);
                w.Active = false;
                conn = w.Conn;
                int me = Thread.CurrentThread.ManagedThreadId;
                while (_callingHandle == handle && _callingThread != me) Monitor.Wait(_lock, 1000);
            }
            if (conn != null) conn.Abort();
            return DiscoveryCode.Ok;
        }

        // ---------------------------------------------------------------- watching (DISC-ETCD-6/7)

        void WatchLoop(long h, WatchState w)
        {
            byte[] key = Key(w.Service, "");
            while (w.Active && !Volatile.Read(ref _closed))
            {
                EtcdHttpConnection conn = null;
                int member = _gw.Current;
                bool ours = false;   // the stream was ended here (compacted, canceled, an error line)
                try
                {
                    string body = "{\"create_request\":{\"key\":\"" + EtcdGateway.B64(key) + "\",\"range_end\":\"" +
                                  EtcdGateway.B64(EtcdGateway.PrefixEnd(key)) + "\",\"start_revision\":\"" +
                                  EtcdGateway.Str(w.Next) + "\",\"prev_kv\":true}}";
                    conn = _gw.Stream("/v3/watch", body, EtcdGateway.Deadline(_timeout));
                    lock (_lock)
                    {
                        if (!w.Active) break;
                        w.Conn = conn;
                    }
                    while (w.Active)
                    {
                        string line = conn.ReadLine();
                        if (line == null) break;
                        if (line.Trim().Length == 0) continue;
                        JsonValue res = EtcdGateway.Member(JsonValue.Parse(line), "result");
                        if (res == null) { ours = true; break; }   // an error object: start again
                        if (EtcdGateway.Int64(res, "compact_revision") > 0)
                        {
                            ours = true;
                            Resync(h, w);   // the history we need is gone: the difference, as events
                            break;
                        }
                        if (EtcdGateway.Bool(res, "canceled")) { ours = true; break; }
                        JsonValue events = EtcdGateway.Member(res, "events");
                        if (events != null && events.Kind == JsonKind.Array)
                            foreach (JsonValue ev in events.Items) OnEvent(h, w, ev);
                    }
                }
                catch (Exception) { }   // etcd away, or unwatched: reconnect (or stop) below
                finally
                {
                    if (conn != null)
                    {
                        lock (_lock) { if (w.Conn == conn) w.Conn = null; }
                        conn.Dispose();
                    }
                }
                if (!ours && w.Active) _gw.Failed(member);   // the member went away: resume on another one (DISC-ETCD-8)
                if (w.Active && !Volatile.Read(ref _closed)) Thread.Sleep(200);   // resume at w.Next
            }
        }

        void OnEvent(long h, WatchState w, JsonValue ev)
        {
            JsonValue kv = EtcdGateway.Member(ev, "kv");
            if (kv == null) return;
            long rev = EtcdGateway.Int64(kv, "mod_revision");
            w.Next = rev + 1;
            JsonValue type = EtcdGateway.Member(ev, "type");
            bool delete = type != null && type.Kind == JsonKind.String && type.Text == "DELETE";
            ServiceEndpoint e;
            ServiceEventType kind;
            bool ok;
            if (delete)
            {
                JsonValue prev = EtcdGateway.Member(ev, "prev_kv");
                e = null;
                ok = prev != null && Decode(EtcdGateway.Member(kv, "key"), EtcdGateway.Member(prev, "value"), out e);
                kind = ServiceEventType.Removed;
            }
            else
            {
                ok = Decode(EtcdGateway.Member(kv, "key"), EtcdGateway.Member(kv, "value"), out e);
                kind = EtcdGateway.Int64(kv, "create_revision") == rev ? ServiceEventType.Added : ServiceEventType.Updated;
            }
            lock (_lock)
            {
                if (ok && e.Service == w.Service)
                {
                    _queue.Enqueue(new Pending { Handle = h, Type = kind, Endpoint = e });
                    if (kind == ServiceEventType.Removed) w.Known.Remove(e.InstanceId);
                    else w.Known[e.InstanceId] = e;
                }
                if (rev > w.Seen) w.Seen = rev;
                Monitor.PulseAll(_lock);
            }
        }

        /// <summary>After a compaction removed the history a watch needs: the difference between the
        /// last list the watcher saw and the current one, as events (DISC-ETCD-7).</summary>
        void Resync(long h, WatchState w)
        {
            JsonValue d = _gw.RangePrefix(Key(w.Service, ""), EtcdGateway.Deadline(_timeout));
            long rev = EtcdGateway.Revision(d);
            var now = new Dictionary<string, ServiceEndpoint>(StringComparer.Ordinal);
            var order = new List<ServiceEndpoint>();
            foreach (ServiceEndpoint e in DecodeAll(w.Service, d)) { now[e.InstanceId] = e; order.Add(e); }
            lock (_lock)
            {
                foreach (KeyValuePair<string, ServiceEndpoint> k in w.Known)
                    if (!now.ContainsKey(k.Key)) _queue.Enqueue(new Pending { Handle = h, Type = ServiceEventType.Removed, Endpoint = k.Value });
                foreach (ServiceEndpoint e in order)
                {
                    ServiceEndpoint old;
                    if (!w.Known.TryGetValue(e.InstanceId, out old))
                        _queue.Enqueue(new Pending { Handle = h, Type = ServiceEventType.Added, Endpoint = e });
                    else if (!Same(old, e))
                        _queue.Enqueue(new Pending { Handle = h, Type = ServiceEventType.Updated, Endpoint = e });
                }
                w.Known = now;
                w.Next = rev + 1;
                if (rev > w.Seen) w.Seen = rev;
                Monitor.PulseAll(_lock);
            }
        }

        static bool Same(ServiceEndpoint a, ServiceEndpoint b)
        {
            return a.Service == b.Service && a.InstanceId == b.InstanceId && a.Host == b.Host && a.Port == b.Port && a.Weight == b.Weight;
        }

        void Dispatch()
        {
            int me = Thread.CurrentThread.ManagedThreadId;
            while (true)
            {
                Pending p;
                WatchState w;
                lock (_lock)
                {
                    while (_queue.Count == 0 && !_closed) Monitor.Wait(_lock);
                    if (_queue.Count == 0) return;   // closed, nothing left
                    p = _queue.Dequeue();
                    _watchers.TryGetValue(p.Handle, out w);
                    _callingHandle = p.Handle;
                    _callingThread = me;
                }
                try
                {
                    if (w != null && w.Active) w.Callback(p.Type, p.Endpoint);
                }
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

        /// <summary>Waits (at most <paramref name="timeout"/>; zero = the request timeout) until every
        /// active watcher has been told about this registry's writes under its service and the
        /// delivery thread is idle: the end of a testee script. Answers whether that happened.</summary>
        public bool Deliver(TimeSpan timeout = default(TimeSpan))
        {
            long deadline = EtcdGateway.Deadline(timeout > TimeSpan.Zero ? timeout : _timeout);
            lock (_lock)
            {
                while (true)
                {
                    bool behind = false;
                    foreach (WatchState w in _watchers.Values)
                    {
                        long wrote;
                        if (w.Active && _written.TryGetValue(w.Service, out wrote) && wrote > Math.Max(w.Seen, w.Since)) { behind = true; break; }
                    }
                    if (!behind && _queue.Count == 0 && _callingHandle == 0) return true;
                    int left = EtcdHttpConnection.Left(deadline);
                    if (left <= 0) return false;
                    Monitor.Wait(_lock, Math.Min(left, 50));
                }
            }
        }

        /// <summary>Stops the keep-alives, the watches and the delivery thread; revokes the lease
        /// (this registry's instances go at once) unless <paramref name="abandon"/>, which leaves
        /// them to expire with the lease, as a crashed process would (DISC-ETCD-5).</summary>
        public void Close(bool abandon)
        {
            _stop.Set();
            List<long> handles;
            lock (_lock) handles = new List<long>(_watchers.Keys);
            foreach (long h in handles) Unwatch(h);
            lock (_lock)
            {
                if (_closed) return;
                _closed = true;
                Monitor.PulseAll(_lock);
            }
            long lease = Lease;
            if (!abandon && lease != 0)
            {
                try { _gw.Post("/v3/lease/revoke", "{\"ID\":\"" + EtcdGateway.Str(lease) + "\"}", EtcdGateway.Deadline(_timeout)); }
                catch (EtcdUnreachableException) { }
            }
        }

        public void Dispose() { Close(false); }
    }
}
