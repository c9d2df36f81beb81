{
  "targets": [
    {
      "target_name": "socket_splice",
      "conditions": [
        ["OS=='linux'", { "sources": ["socket_splice.c"] }]
      ],
      "cflags": ["-O2", "-Wall", "-Wextra"]
    }
  ]
}
