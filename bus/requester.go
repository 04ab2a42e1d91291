package bus

import "context"

type requesterKey struct{}

// WithRequester returns ctx carrying client, the client a request came
// from: the client its subject names (Names.SplitRequest), which a secure
// mesh lets only that client publish to. "" means the plain subject.
func WithRequester(ctx context.Context, client string) context.Context {
	return context.WithValue(ctx, requesterKey{}, client)
}

// Requester returns the client WithRequester put in ctx, "" when none.
func Requester(ctx context.Context) string {
	c, _ := ctx.Value(requesterKey{}).(string)
	return c
}
