// Package security makes an agentmesh mesh a trust boundary in the NATS
// way: decentralized JWT authentication (an operator, one account with a
// signing key, a user JWT per identity carrying its permissions) and TLS.
//
// An Authority holds the keys, made on first use under a directory and
// reused after (files 0600). It configures an embedded server (trusted
// operator, memory resolver preloaded with the account, TLS) and issues
// credentials files for identities: the orchestrator, admin, one per agent
// name, one per client. Issuing needs no server restart: the account's
// signing key signs the new user, and the server trusts whatever it signs.
//
// Permissions (Permissions) make the attacks of docs/security.md impossible
// by construction: an agent takes only its own tasks and publishes results
// only under mesh.result.<agent>., a client cannot touch state, and only the
// orchestrator writes conversations and runs.
package security
