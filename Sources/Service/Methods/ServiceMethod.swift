import JSONRPC

/// A request method of the service: its handler runs with the service at hand.
protocol ServiceMethod: RequestMethod {
  static func handle(_ request: Request<Self>, by service: NetmodelService) throws(ResponseError)
}

extension NetmodelService {
  /// Every request method schema/openrpc.json lists; `exit` and `$/cancelRequest` are
  /// notifications.
  static let requestMethods: [any ServiceMethod.Type] = [
    Initialize.self, Shutdown.self, Discover.self, Stats.self, Configure.self,
    Follow.self, Unfollow.self, SetFollowState.self, GetFollowState.self,
    Subscribe.self, Unsubscribe.self, FetchList.self, GetEntity.self, SetInterfaceState.self,
  ]

  func registerMethods() {
    let dispatcher = server.dispatcher
    for method in Self.requestMethods { register(method) }
    dispatcher.register(Exit.self) { [unowned self] _, _ in
      self.terminate(exitCode: self.shutdownRequested ? 0 : 1)
    }
  }

  private func register<Method: ServiceMethod>(_ method: Method.Type) {
    server.dispatcher.register(method) { [unowned self] request throws(ResponseError) in
      try Method.handle(request, by: self)
    }
  }
}
