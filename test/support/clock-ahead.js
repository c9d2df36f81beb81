// Preloaded (`node --require`) into a command a test runs on S3: its Date.now() runs
// FILESYNC_TEST_CLOCK_AHEAD_MS ahead, so that objects the test wrote moments ago look that old to it.
// An object store dates each object itself; unlike a file's mtime, that date cannot be set back.
const ahead = Number(process.env.FILESYNC_TEST_CLOCK_AHEAD_MS || 0);
const now = Date.now;
Date.now = () => now() + ahead;
