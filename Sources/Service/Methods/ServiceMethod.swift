import JSONRPC

/// A request method of the service: its handler runs with the service at hand.
protocol ServiceMethod: RequestMethod {
  static func handle(_ request: Request<Self>, by service: NetmodelService) throws(ResponseError)
}

extension NetmodelService {
  /// Every method schema/openrpc.json lists but `$/cancelRequest`, the dispatcher's own.
  /// Each is named: registered with its type known, its decoding is compiled for it.
  func registerMethods() {
    register(Initialize.self)
    register(Shutdown.self)
    register(Discover.self)
    register(Stats.self)
    register(Inspect.self)
    register(Configure.self)
    register(Follow.self)
    register(Unfollow.self)
    register(SetFollowState.self)
    register(GetFollowState.self)
    register(Subscribe.self)
    register(Unsubscribe.self)
    register(FetchList.self)
    register(GetEntity.self)
    register(SetInterfaceState.self)
    register(Sync.self)
    register(GetMutations.self)
    server.dispatcher.register(Exit.self) { [unowned self] _, connection in self.exit(from: connection) }
  }

  private func register<Method: ServiceMethod>(_ method: Method.Type) {
    server.dispatcher.register(method) { [unowned self] request throws(ResponseError) in
      try Method.handle(request, by: self)
    }
  }
}
