// Preloaded into a Node MCP server the tests start (NODE_OPTIONS=--require): a test's server
// listens on loopback only, and express's app.listen(PORT) would bind every interface.
const net = require("net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (typeof args[0] === "number" || (typeof args[0] === "string" && /^\d+$/.test(args[0]))) {
    const callbacks = args.slice(1).filter((a) => typeof a === "function");
    return listen.call(this, Number(args[0]), "127.0.0.1", ...callbacks);
  }
  if (args[0] && typeof args[0] === "object" && !args[0].path) {
    args[0] = { ...args[0], host: "127.0.0.1" };
  }
  return listen.apply(this, args);
};
