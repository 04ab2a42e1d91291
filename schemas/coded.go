package schemas

// Coder is an error that names the code (Code*) its sender is told. The
// mesh's error types (ResultError, LimitError, the coded sentinels made
// by NewError, the errors WithCode wraps) implement it, and CodeOf finds
// it anywhere in an error's tree.
type Coder interface {
	error
	ErrorCode() string
}

// NewError returns a sentinel error with message msg that carries code:
// errors.Is matches it by identity and CodeOf reports code for it and for
// every error that wraps it.
func NewError(code, msg string) error { return &codedSentinel{code: code, msg: msg} }

type codedSentinel struct{ code, msg string }

func (e *codedSentinel) Error() string     { return e.msg }
func (e *codedSentinel) ErrorCode() string { return e.code }

// WithCode gives err the code its sender is told, over any code err
// carries; errors.Is and errors.As still see err.
func WithCode(code string, err error) error { return &codedError{code: code, err: err} }

type codedError struct {
	code string
	err  error
}

func (e *codedError) Error() string     { return e.err.Error() }
func (e *codedError) Unwrap() error     { return e.err }
func (e *codedError) ErrorCode() string { return e.code }

// CodeOf is the code (Code*) a sender is told for err: the code of the
// first error in err's tree that carries one (a Coder, looked for in the
// order errors.As looks), internal for an error that carries none, and ""
// for nil. An invalid_pipeline says only that a spec failed its checks, so
// a more precise code under it (limit_exceeded, invalid_id) wins.
func CodeOf(err error) string { return CodeOr(err, CodeInternal) }

// CodeOr is CodeOf with fallback for an error that carries no code.
func CodeOr(err error, fallback string) string {
	if err == nil {
		return ""
	}
	summary := ""
	code := firstCode(err, func(c string) bool {
		if c == CodeInvalidPipeline {
			summary = c
			return false
		}
		return true
	})
	switch {
	case code != "":
		return code
	case summary != "":
		return summary
	}
	return fallback
}

// firstCode walks err's tree depth first and returns the first non-empty
// code that take accepts.
func firstCode(err error, take func(string) bool) string {
	if c, ok := err.(Coder); ok {
		if code := c.ErrorCode(); code != "" && take(code) {
			return code
		}
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		if next := u.Unwrap(); next != nil {
			return firstCode(next, take)
		}
	case interface{ Unwrap() []error }:
		for _, next := range u.Unwrap() {
			if code := firstCode(next, take); code != "" {
				return code
			}
		}
	}
	return ""
}
