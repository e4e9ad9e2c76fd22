module frameproof.local/third-party/gorilla

go 1.23

require (
	github.com/gorilla/websocket v1.5.3
	google.golang.org/protobuf v1.36.12
)
