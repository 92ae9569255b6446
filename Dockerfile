# Multi-stage build of the carryover worker (and the enqueue CLI).
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/ ./cmd/worker ./cmd/enqueue

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/worker /out/enqueue /usr/local/bin/
USER nonroot:nonroot
ENTRYPOINT ["/usr/local/bin/worker"]
