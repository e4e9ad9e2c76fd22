// --mode pipelined: a sliding window; up to --window requests in flight per connection, a new one
// written as soon as a reply makes room.
#pragma once

#include "requests.hpp"

namespace fp::load {

template <class P>
class Pipelined final : public Requests<P, Pipelined<P>> {
 public:
  using Requests<P, Pipelined<P>>::Requests;

  // The window is full, or the server is not reading what is already queued.
  [[nodiscard]] Gate gate(std::size_t) const {
    return this->in_flight() >= this->opt_.window || this->backlog() ? Gate::Stop : Gate::Send;
  }
};

}  // namespace fp::load
