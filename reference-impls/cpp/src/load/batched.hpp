// --mode batched: each connection writes --batch N requests at once (N is the report's window)
// and writes the next batch only after every reply of this one was verified; a reply that does
// not come within --timeout-ms ends the connection (the batch can never be complete).
#pragma once

#include "requests.hpp"

namespace fp::load {

template <class P>
class Batched final : public Requests<P, Batched<P>> {
 public:
  using Requests<P, Batched<P>>::Requests;

  static constexpr bool kTimeoutStops = true;

  // `batch`: requests of the batch being queued.
  [[nodiscard]] Gate gate(std::size_t batch) const {
    if (batch == 0 && this->in_flight() > 0) return Gate::Stop;  // the last batch is not all in
    if (batch >= this->opt_.window) return Gate::Stop;
    return Gate::Send;
  }
};

}  // namespace fp::load
