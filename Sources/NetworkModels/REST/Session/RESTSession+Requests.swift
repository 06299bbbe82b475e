import HTTP
import JSON

/// The HTTP requests of endpoints, in the current environment, with the configured
/// headers, values and credentials.
extension RESTSession {
  /// The HTTP request of `endpoint` for `id` (or `ids`, batched), in the current environment.
  public func request(_ endpoint: RESTConfiguration.Endpoint, kind: String, id: String? = nil, ids: [String] = [])
    -> HTTPRequest
  {
    // A path alone, with no configured values: filled without a dictionary of the
    // two (the common single read).
    if let id, !fillsValues, endpoint.query.isEmpty, endpoint.body == nil {
      let url = Template.fill(
        endpoint.path, prefix: baseURL, kind: kind, id: id, encode: { Template.percentEncode($0) })
      return request(endpoint, url: url, headers: configuration.headers + endpoint.headers)
    }
    // Made whole: adding "id" to a one-entry dictionary would grow and rehash it, for
    // every request.
    let values = id.map { ["kind": kind, "id": $0] } ?? ["kind": kind]
    return request(endpoint, values: values, ids: ids)
  }

  var baseURL: String { configuration.baseURL(of: environment) ?? configuration.environments[0].baseURL }

  /// The HTTP request of `endpoint` with its placeholders filled from `values`.
  func request(
    _ endpoint: RESTConfiguration.Endpoint, values requestValues: [String: String], ids: [String] = [],
    join: String? = nil
  ) -> HTTPRequest {
    let values = fillsValues ? withConfiguredValues(requestValues) : requestValues
    var url = baseURL + Template.fill(endpoint.path, values, encode: { Template.percentEncode($0) })
    let query = Template.encodeParameters(endpoint.query, values, ids: ids, join: join)
    if !query.isEmpty { url += (url.contains("?") ? "&" : "?") + query }
    var headers = configuration.headers + endpoint.headers
    if fillsValues { headers = headers.map { ($0.name, Template.fill($0.value, values, encode: { $0 })) } }
    var body: [UInt8]?
    switch endpoint.body {
    case .json(let template):
      body = Template.fill(json: template, values, ids: ids, join: join).encoded()
      headers.append(("Content-Type", "application/json"))
    case .form(let fields):
      body = Array(Template.encodeParameters(fields, values, ids: ids, join: join).utf8)
      headers.append(("Content-Type", "application/x-www-form-urlencoded"))
    case .graphql(let graphql):
      body = graphql.encoded(values, ids: ids)
      headers.append(("Content-Type", "application/json"))
    case nil:
      break
    }
    return request(endpoint, url: url, headers: headers, body: body)
  }

  /// The request with the credentials added to `headers`.
  func request(
    _ endpoint: RESTConfiguration.Endpoint, url: String, headers: [(name: String, value: String)],
    body: [UInt8]? = nil
  ) -> HTTPRequest {
    var headers = headers
    var carriesCredentials = false
    if let auth = configuration.auth, let authToken {
      headers.append((auth.header, auth.scheme.map { "\($0) \(authToken)" } ?? authToken))
      carriesCredentials = true
    }
    return HTTPRequest(
      method: endpoint.method, url: url, headers: headers, body: body,
      timeout: .milliseconds(endpoint.timeoutMs ?? configuration.timeoutMs),
      connectTimeout: .milliseconds(configuration.connectTimeoutMs), carriesCredentials: carriesCredentials)
  }
}
