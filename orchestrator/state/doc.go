// Package state is the one owner of the KV keys of conversations and runs
// and of their revisions. Every write is a compare-and-set (or a create
// where the first writer decides), compacted under a size bound; the run's
// keys can also be written pipelined, several in one round trip, on the
// $KV subjects bus.Names.KVPut names.
//
// Each fact is stored once: what can be derived is derived when read (a
// run's step statuses from its records, its completed count at its end),
// and the few copies kept for speed (the header's failures, the
// conversation's turn count) are caches with one writer, said so where
// they are declared.
package state
