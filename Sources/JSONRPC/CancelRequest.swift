/// `$/cancelRequest` (LSP's): the peer no longer wants the answer to request `id`, which
/// is then answered `-32800` at once.
enum CancelRequest: NotificationMethod {
  static let name = "$/cancelRequest"

  struct Params: MethodParams {
    static let fields: [ParamField] = [.required("id", [.integer, .string])]
    let id: RequestID

    init(from params: borrowing ParamsReader) throws(ResponseError) {
      guard let value = try params.value("id"), let id = RequestID(value) else {
        throw .invalidParams("id must be an integer or a string", path: "/id")
      }
      self.id = id
    }
  }
}
