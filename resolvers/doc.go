// Package resolvers turns file IDs into content: the JetStream Object Store
// resolver (the default) and a local-directory resolver. It also spills file
// collections too large for one message into the object store and reads them
// back.
package resolvers
