// --mode receive: requests are written and not awaited (against a --sink server, which answers
// nothing): in write batches of --window requests (at most 256 KiB queued); once every request is
// written the connection half-closes and waits for the server to close after reading all of them
// (a protocol with a closing handshake ends with that instead).
#pragma once

#include "requests.hpp"

namespace fp::load {

template <class P>
class Receive final : public Requests<P, Receive<P>> {
 public:
  using Requests<P, Receive<P>>::Requests;

  static constexpr bool kReplies = false;

  // `batch`: requests queued since the last write.
  [[nodiscard]] Gate gate(std::size_t batch) const {
    return this->backlog() || batch >= this->opt_.window ? Gate::Later : Gate::Send;
  }
};

}  // namespace fp::load
