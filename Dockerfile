# Builds the one agentmesh binary. Every service in compose.yaml runs it with
# a different sub-command.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/agentmesh ./cmd/agentmesh

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/agentmesh /usr/local/bin/agentmesh
ENTRYPOINT ["/usr/local/bin/agentmesh"]
CMD ["--help"]
