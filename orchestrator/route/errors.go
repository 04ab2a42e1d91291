package route

import "errors"

// ErrMissingInput reports a required agent input that nothing can fill.
var ErrMissingInput = errors.New("required input has no source")
