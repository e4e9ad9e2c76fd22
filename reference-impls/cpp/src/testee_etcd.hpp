// fp-testee's answer to a discovery script with `etcd` set (feature "discovery-etcd",
// spec/testee.md "On etcd"): the script on an EtcdRegistry (etcd_registry.hpp) at the given
// endpoint and prefix.
#pragma once

#include "testee.pb.h"

namespace fp::testee {

void run_etcd_script(const frameproof::testee::v1::DiscoveryRequest& req, frameproof::testee::v1::DiscoveryResponse* out);

}  // namespace fp::testee
