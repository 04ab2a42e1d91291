package bus

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// ProvisionClientFiles makes client c's object store (ClientFilesStore),
// or binds to it when it exists, with the storage, replicas, age and size
// limits of the shared one (FilesStore), which must exist (Provision). A
// secure mesh's clients, agents and orchestrator cannot make streams:
// admin calls it when issuing c's credentials.
func ProvisionClientFiles(ctx context.Context, js jetstream.JetStream, n Names, c string) (jetstream.ObjectStore, error) {
	if err := (Identity{Role: RoleClient, Name: c}).Validate(); err != nil {
		return nil, err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, defaultProvisionTimeout)
		defer cancel()
	}
	bucket := n.ClientFilesStore(c)
	if obs, err := js.ObjectStore(ctx, bucket); err == nil {
		return obs, nil
	} else if !errors.Is(err, jetstream.ErrBucketNotFound) && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, fmt.Errorf("looking up object store %s: %w", bucket, err)
	}
	shared, err := js.ObjectStore(ctx, n.FilesStore())
	if err != nil {
		return nil, fmt.Errorf("object store %s: %w: provision the mesh before making client %s's files bucket", n.FilesStore(), err, c)
	}
	st, err := shared.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading object store %s: %w", n.FilesStore(), err)
	}
	have := st.(*jetstream.ObjectBucketStatus).StreamInfo().Config
	return ensureObjectStore(ctx, js, objSpec{cfg: jetstream.ObjectStoreConfig{
		Bucket: bucket, Description: "agentmesh files of client " + c,
		Storage: st.Storage(), Replicas: st.Replicas(), TTL: st.TTL(), MaxBytes: have.MaxBytes,
	}})
}
