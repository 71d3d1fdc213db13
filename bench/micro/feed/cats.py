import sys, collections
cats = [
 ("jit", lambda t,s: "CompilerThre" in t),
 ("gc", lambda t,s: "GC Thread" in t or "VM Thread" in t),
 ("lucene merge", lambda t,s: "Lucene Merge" in t or "IndexWriter.merge" in s),
 ("lucene commit", lambda t,s: "IndexWriter.commit" in s or "prepareCommit" in s),
 ("lucene flush/refresh", lambda t,s: "SearcherManager.maybeRefresh" in s or "DocumentsWriter.flush" in s or "DocumentsWriterPerThread.flush" in s or "getReader" in s),
 ("lucene search", lambda t,s: "IndexSearcher.search" in s or "lucene$search" in s),
 ("lucene addDocument", lambda t,s: "IndexWriter.addDocument" in s or "IndexWriter.updateDocument" in s),
 ("lucene other", lambda t,s: "org/apache/lucene" in s),
 ("index job other", lambda t,s: "feed-index-posts" in t),
 ("rocksdb write", lambda t,s: "RocksDB.write" in s or "RocksDB.put" in s or "RocksDB.delete" in s),
 ("rocksdb read", lambda t,s: "RocksDB.get" in s or "multiGet" in s or "RocksIterator" in s or "newIterator" in s or "AbstractRocksIterator" in s),
 ("rocksdb bg", lambda t,s: "rocksdb:" in t),
 ("caffeine", lambda t,s: "caffeine" in s),
 ("json read", lambda t,s: "read_json" in s or "readJson" in s or "JsonParser" in s or "json/ReaderBased" in s or "UTF8StreamJsonParser" in s),
 ("json write", lambda t,s: "write_json" in s or "JsonGenerator" in s or "writeJson" in s),
 ("perf recorder", lambda t,s: "perf$record" in s or "feed-perf" in t or "jobs/perf" in s),
 ("flow runtime", lambda t,s: "herald-flow" in t or "herald/flow" in s),
 ("feed handlers/service", lambda t,s: "herald/feed" in s),
 ("http (herald.http/netty)", lambda t,s: "herald/http" in s or "io/netty" in s or "herald-http-io" in t),
 ("vthread sched/other FJ", lambda t,s: "ForkJoin" in t),
 ("other", lambda t,s: True),
]
tot=0; acc=collections.Counter()
for line in open(sys.argv[1]):
    st, _, n = line.rstrip().rpartition(' ')
    n=int(n); t=st.split(';',1)[0]
    tot+=n
    for name,f in cats:
        if f(t,st): acc[name]+=n; break
posts=float(sys.argv[2]) if len(sys.argv)>2 else 0
for name,_ in cats:
    v=acc[name]
    print(f"{100*v/tot:6.2f}%  {v/posts/1000 if posts else 0:7.1f} us/post  {name}")
print(f"total {tot/1e9:.2f} s, per post {tot/posts/1000 if posts else 0:.1f} us")
