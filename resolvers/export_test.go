package resolvers

// LocalPath exposes the ID check of LocalDir to the external tests.
func LocalPath(l *LocalDir, id string) (string, error) { return l.path(id) }
