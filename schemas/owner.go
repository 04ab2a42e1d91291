package schemas

import "context"

type ownerKey struct{}

// WithOwner returns ctx carrying the client that owns the task, run or
// conversation being worked on (the task's owner extension): the agent
// runtime sets it on the context Execute gets, and file stores keep what
// they store for it in that client's files bucket (docs/security.md).
// "" leaves ctx as it is.
func WithOwner(ctx context.Context, owner string) context.Context {
	if owner == "" {
		return ctx
	}
	return context.WithValue(ctx, ownerKey{}, owner)
}

// OwnerOf returns the owner WithOwner set on ctx, "" for none.
func OwnerOf(ctx context.Context) string {
	o, _ := ctx.Value(ownerKey{}).(string)
	return o
}
