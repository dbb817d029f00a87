# placer: one binary for the manager, the agent and the candidate scheduler.
#   docker build -t ghcr.io/placer-dev/placer:latest .
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=""
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/placer ./cmd/placer

FROM gcr.io/distroless/static:nonroot
COPY --from=build /out/placer /placer
USER 65532:65532
ENTRYPOINT ["/placer"]
