module frameproof.local/third-party/gorilla

go 1.23

require github.com/gorilla/websocket v1.5.3
