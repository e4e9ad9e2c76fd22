// --mode per-packet: one request in flight per connection; the next is written once the reply to
// this one is verified (--window is 1 in this mode).
#pragma once

#include "requests.hpp"

namespace fp::load {

template <class P>
class PerPacket final : public Requests<P, PerPacket<P>> {
 public:
  using Requests<P, PerPacket<P>>::Requests;

  [[nodiscard]] Gate gate(std::size_t) const {
    return this->in_flight() > 0 || this->backlog() ? Gate::Stop : Gate::Send;
  }
};

}  // namespace fp::load
