import assert from 'node:assert/strict';
import { bwrapCommand, HOST_LOOPBACK_ADDRESS, resolvConfForStep, stepNetwork, STEP_NAMESERVER } from '../../extension/core/process/sandbox';
import { decideContainment, tasksNeedingNetstack } from '../../extension/core/run/containment';

// The network a sandboxed step gets (core/process/sandbox.ts): a namespace of its own unless the user said "host", the
// step held (--block-fd) until slirp4netns has brought it up, and a run that needs slirp4netns refusing to start
// without it. The end-to-end behaviour is test/e2e/containment-network.e2e.test.ts.

const bwrap = { kind: 'bwrap' as const, binary: '/usr/bin/bwrap', version: '0.8.0' };
const slirp = { kind: 'slirp4netns' as const, binary: '/usr/bin/slirp4netns', version: '1.2.0' };
const noSlirp = { kind: 'none' as const, reason: 'slirp4netns is not installed: apt-get install slirp4netns' };

describe('a network namespace per step', () => {
  it('true with a stack: --unshare-net and --block-fd after --info-fd; false: --unshare-net alone; "host": neither', () => {
    const args = (network: boolean | 'host', netstack?: string) =>
      bwrapCommand({ binary: '/usr/bin/bwrap', writable: [], network, ...(netstack ? { netstack } : {}) }, '/', 'true', [], [], {}, true).args;
    const own = args(true, '/usr/bin/slirp4netns');
    assert.ok(own.includes('--unshare-net'));
    const info = own.indexOf('--info-fd');
    assert.equal(own[own.indexOf('--block-fd') + 1], String(Number(own[info + 1]) + 1));
    for (const a of [args(false), args(false, '/usr/bin/slirp4netns'), args(true)]) {
      assert.ok(a.includes('--unshare-net'), 'no outside: a namespace with only its loopback');
      assert.ok(!a.includes('--block-fd'));
    }
    assert.ok(!args('host').includes('--unshare-net'));
    assert.ok(!args('host', '/usr/bin/slirp4netns').includes('--block-fd'));
  });

  it('records netns, none or host', () => {
    assert.equal(stepNetwork({ network: true, netstack: '/s' }), 'netns');
    assert.equal(stepNetwork({ network: true }), 'none');
    assert.equal(stepNetwork({ network: false, netstack: '/s' }), 'none');
    assert.equal(stepNetwork({ network: 'host', netstack: '/s' }), 'host');
    assert.equal(stepNetwork(null), 'host');
    assert.equal(HOST_LOOPBACK_ADDRESS, '10.0.2.2');
  });

  it('a run whose tasks need a namespace refuses to start without slirp4netns, naming the tasks and the ways on; never silently on the host', () => {
    const needs = tasksNeedingNetstack([
      { key: 'a', network: true },
      { key: 'b', network: false },
      { key: 'c', network: 'host' },
      { key: 'd', network: true, fullAccess: true },
    ]);
    assert.deepEqual(needs, ['a']);
    const refused = decideContainment('auto', bwrap, noSlirp, needs);
    assert.equal(typeof refused, 'string');
    assert.match(
      refused as string,
      /^no network stack: slirp4netns is not installed: apt-get install slirp4netns\. Nothing ran\. Tasks a have "network": true/,
    );
    assert.match(refused as string, /"network": "host"/);
    const none = decideContainment('auto', bwrap, noSlirp, []);
    assert.ok(typeof none !== 'string' && none.netstack === null && /network: no user-mode stack/.test(none.summary));
    const on = decideContainment('auto', bwrap, slirp, needs);
    assert.ok(
      typeof on !== 'string' && on.netstack === '/usr/bin/slirp4netns' && /slirp4netns 1\.2\.0 \(the host's loopback as 10\.0\.2\.2\)/.test(on.summary),
    );
    const off = decideContainment('off', bwrap, noSlirp, needs);
    assert.ok(typeof off !== 'string' && off.netstack === null && /share the host's network/.test(off.summary));
  });

  it("a host resolver on its own loopback (systemd-resolved) is replaced by slirp4netns's forwarder; other resolvers stay", () => {
    assert.equal(
      resolvConfForStep('# stub\nnameserver 127.0.0.53\noptions edns0 trust-ad\nsearch lan\n'),
      `nameserver ${STEP_NAMESERVER}\n# stub\noptions edns0 trust-ad\nsearch lan\n`,
    );
    assert.equal(resolvConfForStep('nameserver ::1\n'), `nameserver ${STEP_NAMESERVER}\n`);
    assert.equal(resolvConfForStep('nameserver 192.168.1.1\nnameserver 8.8.8.8\n'), null);
    assert.equal(resolvConfForStep(''), null);
  });
});

describe('"network" in a manifest', () => {
  it('true, false or "host"; anything else is a load error at its position', async () => {
    const { parseManifest } = await import('../../extension/core/run/manifest');
    const task = (network: unknown) => ({ key: 'a', engine: 'script', spec: 'echo hi > a.txt', check: 'test -s a.txt', network });
    for (const [value, want] of [
      [true, true],
      [false, false],
      ['host', 'host'],
    ] as const) {
      const { manifest, problems } = parseManifest(JSON.stringify({ tasks: [task(value)] }), '/m.json');
      assert.deepEqual(
        problems.filter((p) => p.severity === 'error'),
        [],
        String(value),
      );
      assert.equal(manifest?.tasks[0]?.network, want);
    }
    const text = JSON.stringify({ tasks: [task('netns')] }, null, 2);
    const { problems } = parseManifest(text, '/m.json');
    const err = problems.find((p) => p.severity === 'error');
    assert.ok(err, 'a string other than "host" loads');
    assert.equal(err.path, 'tasks[0].network');
    assert.match(err.message, /allowed values/);
    assert.equal(err.range?.start.line, text.split('\n').findIndex((l) => l.includes('"netns"')) + 1);
  });
});
