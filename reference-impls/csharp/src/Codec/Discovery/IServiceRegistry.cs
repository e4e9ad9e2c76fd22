using System;

namespace Frameproof.Discovery
{
    /// <summary>
    /// A service registry (spec/discovery.md §4-§5): the in-process <see cref="ServiceRegistry"/> and
    /// the etcd-backed <see cref="EtcdRegistry"/> (§8). Every operation answers a
    /// <see cref="DiscoveryCode"/>; a remote registry answers CONNECTION_ERROR when its store cannot be
    /// reached within its request timeout (DISC-ETCD-7). Selectors (<see cref="Selector"/>) read
    /// through <see cref="Discover"/>.
    /// </summary>
    public interface IServiceRegistry
    {
        /// <summary>DISC-REG-1/2: a new instance is appended, an existing one replaced in place.</summary>
        DiscoveryCode Register(ServiceEndpoint e);

        /// <summary>DISC-REG-3/4: removes the instance; NOT_FOUND when there was none.</summary>
        DiscoveryCode Deregister(string service, string instanceId);

        /// <summary>DISC-REG-5: the service's instances in list order; an unknown service is OK and empty.</summary>
        DiscoveryCode Discover(string service, out EndpointList list);

        /// <summary>DISC-WATCH-1: subscribes to the service's changes from now on (no replay).</summary>
        DiscoveryCode Watch(string service, Action<ServiceEventType, ServiceEndpoint> callback, out long handle);

        /// <summary>DISC-WATCH-5: once this returns the callback is not called again.</summary>
        DiscoveryCode Unwatch(long handle);
    }
}
