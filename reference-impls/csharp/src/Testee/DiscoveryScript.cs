using System;
using System.Collections.Generic;
using System.Threading;
using Frameproof.Codec;
using Frameproof.Discovery;

namespace Frameproof.Testee
{
    // ---------------------------------------------------------------- messages (schemas/testee.proto, Discovery*)
    // A discovery request is a TesteeRequest with only field 6 set, its answer a TesteeResponse with
    // only field 8 set (spec/testee.md, "discovery"): see TesteeRequestMsg.Parse / TesteeResponseMsg.

    public sealed class DiscoveryEndpointMsg
    {
        public string Service = "", InstanceId = "", Host = "";
        public uint Port, Weight;

        public static DiscoveryEndpointMsg Parse(ProtoReader r)
        {
            var m = new DiscoveryEndpointMsg();
            while (!r.AtEnd)
            {
                int f, wt; r.ReadTag(out f, out wt);
                switch (f)
                {
                    case 1: ProtoReader.Expect(wt, 2, f); m.Service = r.ReadString(); break;
                    case 2: ProtoReader.Expect(wt, 2, f); m.InstanceId = r.ReadString(); break;
                    case 3: ProtoReader.Expect(wt, 2, f); m.Host = r.ReadString(); break;
                    case 4: ProtoReader.Expect(wt, 0, f); m.Port = (uint)r.ReadVarint(); break;
                    case 5: ProtoReader.Expect(wt, 0, f); m.Weight = (uint)r.ReadVarint(); break;
                    default: r.Skip(wt); break;
                }
            }
            return m;
        }

        public ProtoWriter ToWriter()
        {
            var w = new ProtoWriter();
            w.String(1, Service); w.String(2, InstanceId); w.String(3, Host); w.UInt32(4, Port); w.UInt32(5, Weight);
            return w;
        }

        public ServiceEndpoint ToEndpoint() { return new ServiceEndpoint(Service, InstanceId, Host, Port, Weight); }

        public static DiscoveryEndpointMsg From(ServiceEndpoint e)
        {
            return new DiscoveryEndpointMsg { Service = e.Service, InstanceId = e.InstanceId, Host = e.Host, Port = e.Port, Weight = e.Weight };
        }
    }

    public enum DiscoveryOpKind { None = 0, Register = 1, Deregister = 2, Discover = 3, Watch = 4, Unwatch = 5, Select = 6, EtcdEncode = 7, EtcdDecode = 8, Concurrent = 9, WaitMs = 10 }

    /// <summary>DiscoveryOp with its oneof flattened (the members' fields side by side).</summary>
    public sealed class DiscoveryOpMsg
    {
        public DiscoveryOpKind Kind;
        public DiscoveryEndpointMsg Endpoint;      // register, deregister, etcd_encode
        public string Service = "";                // discover, watch, select, concurrent
        public DiscoveryOpMsg OnFirstEvent;        // watch
        public uint Number;                        // unwatch, wait_ms
        public uint SelectorId, Count; public string Selector = ""; public ulong Seed;   // select
        public string Prefix = ""; public byte[] Key = new byte[0], Value = new byte[0]; // etcd_encode / etcd_decode
        public uint Threads, Rounds, Picks;        // concurrent

        public static DiscoveryOpMsg Parse(ProtoReader r)
        {
            var m = new DiscoveryOpMsg();
            while (!r.AtEnd)
            {
                int f, wt; r.ReadTag(out f, out wt);
                if (f < 1 || f > 10) { r.Skip(wt); continue; }
                m = new DiscoveryOpMsg { Kind = (DiscoveryOpKind)f };   // oneof: the last one wins
                if (f == 5 || f == 10) { ProtoReader.Expect(wt, 0, f); m.Number = (uint)r.ReadVarint(); continue; }
                ProtoReader.Expect(wt, 2, f);
                if (f == 3) { m.Service = r.ReadString(); continue; }
                ProtoReader s = r.ReadMessage();
                if (f == 1 || f == 2) { m.Endpoint = DiscoveryEndpointMsg.Parse(s); continue; }
                while (!s.AtEnd)
                {
                    int g, w; s.ReadTag(out g, out w);
                    int key = f * 16 + g;
                    switch (key)
                    {
                        case 4 * 16 + 1: ProtoReader.Expect(w, 2, g); m.Service = s.ReadString(); break;
                        case 4 * 16 + 2: ProtoReader.Expect(w, 2, g); m.OnFirstEvent = Parse(s.ReadMessage()); break;
                        case 6 * 16 + 1: ProtoReader.Expect(w, 0, g); m.SelectorId = (uint)s.ReadVarint(); break;
                        case 6 * 16 + 2: ProtoReader.Expect(w, 2, g); m.Service = s.ReadString(); break;
                        case 6 * 16 + 3: ProtoReader.Expect(w, 2, g); m.Selector = s.ReadString(); break;
                        case 6 * 16 + 4: ProtoReader.Expect(w, 0, g); m.Seed = s.ReadVarint(); break;
                        case 6 * 16 + 5: ProtoReader.Expect(w, 0, g); m.Count = (uint)s.ReadVarint(); break;
                        case 7 * 16 + 1: ProtoReader.Expect(w, 2, g); m.Prefix = s.ReadString(); break;
                        case 7 * 16 + 2: ProtoReader.Expect(w, 2, g); m.Endpoint = DiscoveryEndpointMsg.Parse(s.ReadMessage()); break;
                        case 8 * 16 + 1: ProtoReader.Expect(w, 2, g); m.Prefix = s.ReadString(); break;
                        case 8 * 16 + 2: ProtoReader.Expect(w, 2, g); m.Key = s.ReadBytes(); break;
                        case 8 * 16 + 3: ProtoReader.Expect(w, 2, g); m.Value = s.ReadBytes(); break;
                        case 9 * 16 + 1: ProtoReader.Expect(w, 2, g); m.Service = s.ReadString(); break;
                        case 9 * 16 + 2: ProtoReader.Expect(w, 0, g); m.Threads = (uint)s.ReadVarint(); break;
                        case 9 * 16 + 3: ProtoReader.Expect(w, 0, g); m.Rounds = (uint)s.ReadVarint(); break;
                        case 9 * 16 + 4: ProtoReader.Expect(w, 0, g); m.Picks = (uint)s.ReadVarint(); break;
                        default: s.Skip(w); break;
                    }
                }
            }
            return m;
        }

        public ProtoWriter ToWriter()
        {
            var w = new ProtoWriter();
            var b = new ProtoWriter();
            switch (Kind)
            {
                case DiscoveryOpKind.Register:
                case DiscoveryOpKind.Deregister: w.Message((int)Kind, (Endpoint ?? new DiscoveryEndpointMsg()).ToWriter()); return w;
                case DiscoveryOpKind.Discover: w.StringAlways(3, Service); return w;
                case DiscoveryOpKind.Unwatch:
                case DiscoveryOpKind.WaitMs:
                    // a oneof member is written even when zero
                    int field = (int)Kind; w.UInt32(field, Number); if (Number == 0) { w.WriteVarintRaw((ulong)(field << 3)); w.WriteVarintRaw(0); } return w;
                case DiscoveryOpKind.Watch: b.String(1, Service); if (OnFirstEvent != null) b.Message(2, OnFirstEvent.ToWriter()); break;
                case DiscoveryOpKind.Select: b.UInt32(1, SelectorId); b.String(2, Service); b.String(3, Selector); b.UInt64(4, Seed); b.UInt32(5, Count); break;
                case DiscoveryOpKind.EtcdEncode: b.String(1, Prefix); if (Endpoint != null) b.Message(2, Endpoint.ToWriter()); break;
                case DiscoveryOpKind.EtcdDecode: b.String(1, Prefix); b.Bytes(2, Key); b.Bytes(3, Value); break;
                case DiscoveryOpKind.Concurrent: b.String(1, Service); b.UInt32(2, Threads); b.UInt32(3, Rounds); b.UInt32(4, Picks); break;
                default: return w;
            }
            w.Message((int)Kind, b);
            return w;
        }
    }

    public sealed class DiscoveryRequestMsg
    {
        public CodecConfig Codec = new CodecConfig();
        public List<DiscoveryOpMsg> Ops = new List<DiscoveryOpMsg>();
        public bool HasEtcd;
        public string EtcdEndpoint = "", EtcdPrefix = "";
        public uint EtcdLeaseTtlS, EtcdRequestTimeoutMs;
        public bool EtcdAbandon;

        public static DiscoveryRequestMsg Parse(ProtoReader r)
        {
            var m = new DiscoveryRequestMsg();
            while (!r.AtEnd)
            {
                int f, wt; r.ReadTag(out f, out wt);
                if (f == 1) { ProtoReader.Expect(wt, 2, f); m.Codec = CodecConfig.Parse(r.ReadMessage()); }
                else if (f == 2) { ProtoReader.Expect(wt, 2, f); m.Ops.Add(DiscoveryOpMsg.Parse(r.ReadMessage())); }
                else if (f == 3)
                {
                    ProtoReader.Expect(wt, 2, f);
                    m.HasEtcd = true;
                    ProtoReader s = r.ReadMessage();
                    while (!s.AtEnd)
                    {
                        int g, w; s.ReadTag(out g, out w);
                        if (g == 1) { ProtoReader.Expect(w, 2, g); m.EtcdEndpoint = s.ReadString(); }
                        else if (g == 2) { ProtoReader.Expect(w, 2, g); m.EtcdPrefix = s.ReadString(); }
                        else if (g == 3) { ProtoReader.Expect(w, 0, g); m.EtcdLeaseTtlS = (uint)s.ReadVarint(); }
                        else if (g == 4) { ProtoReader.Expect(w, 0, g); m.EtcdAbandon = s.ReadVarint() != 0; }
                        else if (g == 5) { ProtoReader.Expect(w, 0, g); m.EtcdRequestTimeoutMs = (uint)s.ReadVarint(); }
                        else s.Skip(w);
                    }
                }
                else r.Skip(wt);
            }
            return m;
        }

        /// <summary>The TesteeDiscoveryRequest bytes (field 6 of TesteeRequest); for the unit tests.</summary>
        public byte[] ToTesteeBytes()
        {
            var b = new ProtoWriter();
            var c = new ProtoWriter(); Codec.WriteTo(c); b.Message(1, c);
            foreach (DiscoveryOpMsg op in Ops) b.Message(2, op.ToWriter());
            if (HasEtcd)
            {
                var e = new ProtoWriter();
                e.String(1, EtcdEndpoint); e.String(2, EtcdPrefix); e.UInt32(3, EtcdLeaseTtlS); e.Bool(4, EtcdAbandon); e.UInt32(5, EtcdRequestTimeoutMs);
                b.Message(3, e);
            }
            var w = new ProtoWriter();
            w.Message(6, b);
            return w.ToArray();
        }
    }

    public sealed class DiscoveryResultMsg
    {
        public uint Code;
        public List<DiscoveryEndpointMsg> Endpoints = new List<DiscoveryEndpointMsg>();
        public uint Watch;
        public List<string> Picks = new List<string>();
        public byte[] EtcdKey, EtcdValue;
        // concurrent (present when Concurrent is set)
        public bool Concurrent;
        public uint Failures, Added, Removed, Updated;
        public List<KeyValuePair<string, uint>> PickCounts = new List<KeyValuePair<string, uint>>();

        public ProtoWriter ToWriter()
        {
            var w = new ProtoWriter();
            w.UInt32(1, Code);
            foreach (var e in Endpoints) w.Message(2, e.ToWriter());
            w.UInt32(3, Watch);
            foreach (var p in Picks) w.StringAlways(4, p);
            w.Bytes(5, EtcdKey); w.Bytes(6, EtcdValue);
            if (Concurrent)
            {
                var c = new ProtoWriter();
                c.UInt32(1, Failures); c.UInt32(2, Added); c.UInt32(3, Removed); c.UInt32(4, Updated);
                foreach (var kv in PickCounts)
                {
                    var x = new ProtoWriter(); x.String(1, kv.Key); x.UInt32(2, kv.Value);
                    c.Message(5, x);
                }
                w.Message(7, c);
            }
            return w;
        }

        public static DiscoveryResultMsg Parse(ProtoReader r)
        {
            var m = new DiscoveryResultMsg();
            while (!r.AtEnd)
            {
                int f, wt; r.ReadTag(out f, out wt);
                switch (f)
                {
                    case 1: ProtoReader.Expect(wt, 0, f); m.Code = (uint)r.ReadVarint(); break;
                    case 2: ProtoReader.Expect(wt, 2, f); m.Endpoints.Add(DiscoveryEndpointMsg.Parse(r.ReadMessage())); break;
                    case 3: ProtoReader.Expect(wt, 0, f); m.Watch = (uint)r.ReadVarint(); break;
                    case 4: ProtoReader.Expect(wt, 2, f); m.Picks.Add(r.ReadString()); break;
                    case 5: ProtoReader.Expect(wt, 2, f); m.EtcdKey = r.ReadBytes(); break;
                    case 6: ProtoReader.Expect(wt, 2, f); m.EtcdValue = r.ReadBytes(); break;
                    case 7:
                        ProtoReader.Expect(wt, 2, f);
                        m.Concurrent = true;
                        ProtoReader s = r.ReadMessage();
                        while (!s.AtEnd)
                        {
                            int g, w; s.ReadTag(out g, out w);
                            if (g >= 1 && g <= 4)
                            {
                                ProtoReader.Expect(w, 0, g);
                                uint v = (uint)s.ReadVarint();
                                if (g == 1) m.Failures = v; else if (g == 2) m.Added = v; else if (g == 3) m.Removed = v; else m.Updated = v;
                            }
                            else if (g == 5)
                            {
                                ProtoReader.Expect(w, 2, g);
                                ProtoReader x = s.ReadMessage();
                                string id = ""; uint n = 0;
                                while (!x.AtEnd)
                                {
                                    int h, hw; x.ReadTag(out h, out hw);
                                    if (h == 1) { ProtoReader.Expect(hw, 2, h); id = x.ReadString(); }
                                    else if (h == 2) { ProtoReader.Expect(hw, 0, h); n = (uint)x.ReadVarint(); }
                                    else x.Skip(hw);
                                }
                                m.PickCounts.Add(new KeyValuePair<string, uint>(id, n));
                            }
                            else s.Skip(w);
                        }
                        break;
                    default: r.Skip(wt); break;
                }
            }
            return m;
        }
    }

    public sealed class DiscoveryEventMsg
    {
        public uint Watch, Type, Op;
        public DiscoveryEndpointMsg Endpoint;
        public DiscoveryResultMsg Nested;

        public ProtoWriter ToWriter()
        {
            var w = new ProtoWriter();
            w.UInt32(1, Watch); w.Enum(2, (int)Type);
            if (Endpoint != null) w.Message(3, Endpoint.ToWriter());
            w.UInt32(4, Op);
            if (Nested != null) w.Message(5, Nested.ToWriter());
            return w;
        }

        public static DiscoveryEventMsg Parse(ProtoReader r)
        {
            var m = new DiscoveryEventMsg();
            while (!r.AtEnd)
            {
                int f, wt; r.ReadTag(out f, out wt);
                switch (f)
                {
                    case 1: ProtoReader.Expect(wt, 0, f); m.Watch = (uint)r.ReadVarint(); break;
                    case 2: ProtoReader.Expect(wt, 0, f); m.Type = (uint)r.ReadVarint(); break;
                    case 3: ProtoReader.Expect(wt, 2, f); m.Endpoint = DiscoveryEndpointMsg.Parse(r.ReadMessage()); break;
                    case 4: ProtoReader.Expect(wt, 0, f); m.Op = (uint)r.ReadVarint(); break;
                    case 5: ProtoReader.Expect(wt, 2, f); m.Nested = DiscoveryResultMsg.Parse(r.ReadMessage()); break;
                    default: r.Skip(wt); break;
                }
            }
            return m;
        }
    }

    public sealed class DiscoveryResponseMsg
    {
        public List<DiscoveryResultMsg> Results = new List<DiscoveryResultMsg>();
        public List<DiscoveryEventMsg> Events = new List<DiscoveryEventMsg>();

        public ProtoWriter ToWriter()
        {
            var w = new ProtoWriter();
            foreach (var r in Results) w.Message(1, r.ToWriter());
            foreach (var e in Events) w.Message(2, e.ToWriter());
            return w;
        }

        public static DiscoveryResponseMsg Parse(ProtoReader r)
        {
            var m = new DiscoveryResponseMsg();
            while (!r.AtEnd)
            {
                int f, wt; r.ReadTag(out f, out wt);
                if (f == 1) { ProtoReader.Expect(wt, 2, f); m.Results.Add(DiscoveryResultMsg.Parse(r.ReadMessage())); }
                else if (f == 2) { ProtoReader.Expect(wt, 2, f); m.Events.Add(DiscoveryEventMsg.Parse(r.ReadMessage())); }
                else r.Skip(wt);
            }
            return m;
        }
    }

    // ---------------------------------------------------------------- the script (spec/testee.md)

    /// <summary>Runs one registry script on one fresh registry: the in-process one, or with
    /// <c>etcd</c> set the etcd-backed one (feature discovery-etcd, spec/discovery.md §8): results in
    /// op order, every callback call as an event, nested ops from inside callbacks, the threads phase
    /// (in-process only).</summary>
    public sealed class DiscoveryScript
    {
        readonly IServiceRegistry _reg;
        readonly ServiceRegistry _local;                              // null on etcd
        readonly DiscoveryResponseMsg _resp = new DiscoveryResponseMsg();
        readonly List<long> _watchHandles = new List<long>();        // watcher number -> handle
        readonly Dictionary<uint, Selector> _selectors = new Dictionary<uint, Selector>();
        volatile uint _op;

        DiscoveryScript(IServiceRegistry reg)
        {
            _reg = reg;
            _local = reg as ServiceRegistry;
        }

        void RunOps(List<DiscoveryOpMsg> ops)
        {
            for (int i = 0; i < ops.Count; i++)
            {
                _op = (uint)i;
                DiscoveryResultMsg r = Execute(ops[i]);
                _resp.Results.Add(r);
            }
            _op = (uint)ops.Count;
        }

        public static DiscoveryResponseMsg Run(List<DiscoveryOpMsg> ops)
        {
            var local = new ServiceRegistry();
            var s = new DiscoveryScript(local);
            s.RunOps(ops);
            local.Deliver();
            return s._resp;
        }

        /// <summary>The script on an <see cref="EtcdRegistry"/> at <c>etcd.endpoint</c> (spec/testee.md,
        /// "On etcd"): events arrive on the registry's delivery thread, so before answering wait (at
        /// most the request timeout) until every watcher has been told about the script's own writes;
        /// then close the registry: revoke its lease, or with <c>abandon</c> leave its keys to expire.
        /// A prefix or endpoint the registry rejects answers INVALID_ARGUMENT for every op.</summary>
        public static DiscoveryResponseMsg RunEtcd(DiscoveryRequestMsg req)
        {
            EtcdRegistry reg;
            try
            {
                reg = new EtcdRegistry(req.EtcdEndpoint, req.EtcdPrefix, (int)Math.Min(req.EtcdLeaseTtlS, (uint)int.MaxValue),
                                       TimeSpan.FromMilliseconds(req.EtcdRequestTimeoutMs));
            }
            catch (ArgumentException)
            {
                var bad = new DiscoveryResponseMsg();
                foreach (DiscoveryOpMsg op in req.Ops) bad.Results.Add(new DiscoveryResultMsg { Code = (uint)DiscoveryCode.InvalidArgument });
                return bad;
            }
            var s = new DiscoveryScript(reg);
            try
            {
                s.RunOps(req.Ops);
                reg.Deliver();
            }
            finally
            {
                reg.Close(req.EtcdAbandon);   // unwatches first: no callback runs after this
            }
            lock (s._resp.Events) return s._resp;
        }

        Action<ServiceEventType, ServiceEndpoint> Callback(uint number, DiscoveryOpMsg onFirst)
        {
            bool fired = false;
            return (type, ep) =>
            {
                var ev = new DiscoveryEventMsg { Watch = number, Type = (uint)type, Endpoint = DiscoveryEndpointMsg.From(ep), Op = _op };
                lock (_resp.Events) _resp.Events.Add(ev);
                if (onFirst != null && !fired)
                {
                    fired = true;
                    ev.Nested = Execute(onFirst);
                }
            };
        }

        DiscoveryResultMsg Execute(DiscoveryOpMsg op)
        {
            var res = new DiscoveryResultMsg();
            DiscoveryCode code = DiscoveryCode.Ok;
            switch (op.Kind)
            {
                case DiscoveryOpKind.Register:
                    code = _reg.Register((op.Endpoint ?? new DiscoveryEndpointMsg()).ToEndpoint());
                    break;
                case DiscoveryOpKind.Deregister:
                {
                    DiscoveryEndpointMsg e = op.Endpoint ?? new DiscoveryEndpointMsg();
                    code = _reg.Deregister(e.Service, e.InstanceId);
                    break;
                }
                case DiscoveryOpKind.Discover:
                {
                    EndpointList list;
                    code = _reg.Discover(op.Service, out list);
                    for (int i = 0; i < list.Count; i++) res.Endpoints.Add(DiscoveryEndpointMsg.From(list[i]));
                    break;
                }
                case DiscoveryOpKind.Watch:
                {
                    uint number = (uint)_watchHandles.Count;
                    long h;
                    code = _reg.Watch(op.Service, Callback(number, op.OnFirstEvent), out h);
                    if (code == DiscoveryCode.Ok) { _watchHandles.Add(h); res.Watch = number; }
                    break;
                }
                case DiscoveryOpKind.Unwatch:
                    code = op.Number < _watchHandles.Count ? _reg.Unwatch(_watchHandles[(int)op.Number]) : DiscoveryCode.NotFound;
                    break;
                case DiscoveryOpKind.Select:
                {
                    Selector s;
                    if (!_selectors.TryGetValue(op.SelectorId, out s))
                    {
                        code = Selector.Create(_reg, op.Service, op.Selector, op.Seed, out s);
                        if (code != DiscoveryCode.Ok) break;
                        _selectors[op.SelectorId] = s;
                    }
                    for (uint i = 0; i < op.Count; i++)
                    {
                        ServiceEndpoint picked;
                        code = s.Select(out picked);
                        if (code != DiscoveryCode.Ok) break;
                        res.Picks.Add(picked.InstanceId);
                    }
                    break;
                }
                case DiscoveryOpKind.EtcdEncode:
                {
                    byte[] k, v;
                    code = EtcdMapping.Encode(op.Prefix, (op.Endpoint ?? new DiscoveryEndpointMsg()).ToEndpoint(), out k, out v);
                    res.EtcdKey = k; res.EtcdValue = v;
                    break;
                }
                case DiscoveryOpKind.EtcdDecode:
                {
                    ServiceEndpoint e;
                    code = EtcdMapping.Decode(op.Prefix, op.Key, op.Value, out e);
                    if (e != null) res.Endpoints.Add(DiscoveryEndpointMsg.From(e));
                    break;
                }
                case DiscoveryOpKind.Concurrent:
                    code = _local == null ? DiscoveryCode.InvalidArgument : Concurrent(_local, op, res);   // in-process only
                    break;
                case DiscoveryOpKind.WaitMs:   // time passes (on etcd the runner acts on the store meanwhile)
                    System.Threading.Thread.Sleep((int)Math.Min(op.Number, int.MaxValue));
                    break;
                default:
                    throw new InvalidOperationException("unknown discovery op");
            }
            res.Code = (uint)code;
            return res;
        }

        /// <summary>The threads phase (DISC-THREAD-1/2, spec/testee.md).</summary>
        static DiscoveryCode Concurrent(ServiceRegistry reg, DiscoveryOpMsg op, DiscoveryResultMsg res)
        {
            string svc = op.Service;
            int threads = (int)Math.Max(1, Math.Min(op.Threads, 64u)), rounds = (int)op.Rounds, picks = (int)op.Picks;
            int failures = 0, added = 0, removed = 0, updated = 0;
            long handle;
            DiscoveryCode wc = reg.Watch(svc, (type, ep) =>
            {
                if (type == ServiceEventType.Added) Interlocked.Increment(ref added);
                else if (type == ServiceEventType.Removed) Interlocked.Increment(ref removed);
                else Interlocked.Increment(ref updated);
            }, out handle);
            Selector shared = null;
            var picked = new Dictionary<string, uint>(StringComparer.Ordinal);
            var barrier = new Barrier(threads, b => Selector.Create(reg, svc, "round-robin", 0UL, out shared));
            var ts = new Thread[threads];
            for (int t = 0; t < threads; t++)
            {
                int me = t;
                ts[t] = new Thread(() =>
                {
                    for (int r = 0; r < rounds; r++)
                    {
                        string id = "c" + me + "-" + r;
                        if (reg.Register(new ServiceEndpoint(svc, id, "127.0.0.1", (uint)(r % 65536), 1)) != DiscoveryCode.Ok) Interlocked.Increment(ref failures);
                        EndpointList list;
                        bool found = false;
                        if (reg.Discover(svc, out list) == DiscoveryCode.Ok)
                            for (int i = 0; i < list.Count && !found; i++) found = list[i].InstanceId == id;
                        if (!found) Interlocked.Increment(ref failures);
                        if (r % 2 == 1 && reg.Deregister(svc, id) != DiscoveryCode.Ok) Interlocked.Increment(ref failures);
                    }
                    barrier.SignalAndWait();
                    var mine = new Dictionary<string, uint>(StringComparer.Ordinal);
                    for (int i = 0; i < picks; i++)
                    {
                        ServiceEndpoint e;
                        if (shared == null || shared.Select(out e) != DiscoveryCode.Ok) { Interlocked.Increment(ref failures); continue; }
                        uint n; mine.TryGetValue(e.InstanceId, out n); mine[e.InstanceId] = n + 1;
                    }
                    lock (picked) foreach (var kv in mine) { uint n; picked.TryGetValue(kv.Key, out n); picked[kv.Key] = n + kv.Value; }
                }) { IsBackground = true };
                ts[t].Start();
            }
            bool done = true;
            foreach (Thread t in ts) done &= t.Join(60000);
            reg.Deliver();
            if (wc == DiscoveryCode.Ok) reg.Unwatch(handle);
            EndpointList final;
            reg.Discover(svc, out final);
            for (int i = 0; i < final.Count; i++) res.Endpoints.Add(DiscoveryEndpointMsg.From(final[i]));
            res.Concurrent = true;
            res.Failures = (uint)failures; res.Added = (uint)added; res.Removed = (uint)removed; res.Updated = (uint)updated;
            lock (picked) foreach (var kv in picked) res.PickCounts.Add(kv);
            return done ? DiscoveryCode.Ok : DiscoveryCode.InternalError;
        }
    }
}
