// Name look-ups the way ipvsadm does them, for listing without -n and for parsing host[:port].
//
// ipvsadm (libc):                          here (Node):
//   gethostbyaddr(addr) -> h_name            dns.lookupService(addr, 0) -> hostname
//                                            (getnameinfo(NI_NAMEREQD): NSS, so /etc/hosts and DNS)
//   getservbyport(port, "tcp"|"udp"|"sctp")  /etc/services parsed here (first entry wins, as the
//                                            NSS "files" backend returns it)
//   gethostbyname(name) (IPv4 only)          dns.lookup(name, { family: 4 })
//   getservbyname(name, proto)               /etc/services parsed here (names and aliases)
//
// Host names are the same: glibc's getnameinfo() is built on gethostbyaddr_r() and returns
// its h_name (NI_NOFQDN is not asked for), so /etc/hosts, DNS and any other NSS "hosts"
// source give what ipvsadm prints. (The VM test compares -L listings with /etc/hosts names.)
//
// The one remaining difference: port names come from /etc/services only. getservbyport()
// asks every source the NSS "services" line of /etc/nsswitch.conf lists (files, but also db,
// sss, nis ...); Node has no binding to it, so a port named only by a non-files source is
// printed by ipvsadm as its name and here as its number. Debian's default is "services: db
// files", and /var/lib/misc/services.db normally mirrors /etc/services, so in practice both
// print the same.

import { lookup, lookupService } from 'node:dns/promises';
import { readFileSync } from 'node:fs';
import { AddressFamily } from '../../model/ipvs';
import { IPPROTO_SCTP, IPPROTO_TCP, IPPROTO_UDP } from '../../uapi/inet';
import { familyOfValidAddress } from '../../model/ip-family';

/** What parsing host[:port] needs. */
export interface Resolver {
  /** gethostbyname() restricted to IPv4, as ipvsadm's host_to_addr(); undefined when unknown */
  hostToIPv4(name: string): Promise<string | undefined>;
  /** getservbyname(name, proto); undefined when unknown or the protocol has no name table */
  serviceToPort(name: string, protocol: number): number | undefined;
}

/** What listing without -n needs, synchronously (look-ups are done before formatting). */
export interface Names {
  host(af: AddressFamily, address: string): string | undefined;
  service(port: number, protocol: number): string | undefined;
}

const PROTO_NAME: Readonly<Record<number, string>> = {
  [IPPROTO_TCP]: 'tcp',
  [IPPROTO_UDP]: 'udp',
  [IPPROTO_SCTP]: 'sctp',
};

/** /etc/services, both directions, first entry wins per key (as getservby* with NSS files). */
export class ServicesTable {
  private readonly byPort = new Map<string, string>();
  private readonly byName = new Map<string, number>();

  constructor(text: string) {
    for (const raw of text.split('\n')) {
      const line = raw.replace(/#.*/, '').trim();
      if (!line) continue;
      const [name, portProto, ...aliases] = line.split(/\s+/);
      const m = /^(\d+)\/(\w+)$/.exec(portProto ?? '');
      if (!name || !m) continue;
      const port = Number(m[1]);
      const proto = m[2]!.toLowerCase();
      if (port > 65535) continue;
      const pk = `${port}/${proto}`;
      if (!this.byPort.has(pk)) this.byPort.set(pk, name);
      for (const n of [name, ...aliases]) {
        const nk = `${n}/${proto}`;
        if (!this.byName.has(nk)) this.byName.set(nk, port);
      }
    }
  }

  static load(path = '/etc/services'): ServicesTable {
    try {
      return new ServicesTable(readFileSync(path, 'utf8'));
    } catch {
      return new ServicesTable('');
    }
  }

  portToName(port: number, protocol: number): string | undefined {
    const p = PROTO_NAME[protocol];
    return p ? this.byPort.get(`${port}/${p}`) : undefined;
  }

  nameToPort(name: string, protocol: number): number | undefined {
    const p = PROTO_NAME[protocol];
    return p ? this.byName.get(`${name}/${p}`) : undefined;
  }
}

/** The system's resolver: NSS for hosts (through libuv's getaddrinfo/getnameinfo), /etc/services. */
export class SystemResolver implements Resolver {
  private servicesTable: ServicesTable | undefined;

  constructor(private readonly servicesPath = '/etc/services') {}

  get services(): ServicesTable {
    return (this.servicesTable ??= ServicesTable.load(this.servicesPath));
  }

  async hostToIPv4(name: string): Promise<string | undefined> {
    try {
      const r = await lookup(name, { family: 4 });
      return r.address;
    } catch {
      return undefined;
    }
  }

  serviceToPort(name: string, protocol: number): number | undefined {
    return this.services.nameToPort(name, protocol);
  }

  /** Reverse look-up of one address; undefined when it has no name. */
  async addressToHost(address: string): Promise<string | undefined> {
    try {
      const r = await lookupService(address, 0);
      // getnameinfo without a name would give the numeric form; NI_NAMEREQD makes it fail instead
      return r.hostname && r.hostname !== address ? r.hostname : undefined;
    } catch {
      return undefined;
    }
  }

  /** Looks every address up once (concurrently) and returns the synchronous view. */
  async names(addresses: Iterable<{ af: AddressFamily; address: string }>): Promise<Names> {
    const unique = new Map<string, AddressFamily>();
    for (const a of addresses) unique.set(a.address, a.af);
    const hosts = new Map<string, string | undefined>();
    await Promise.all(
      [...unique.keys()].map(async (addr) => {
        hosts.set(addr, await this.addressToHost(addr));
      }),
    );
    const services = this.services;
    return {
      host: (_af, address) => hosts.get(address),
      service: (port, protocol) => services.portToName(port, protocol),
    };
  }
}

/** A resolver and name table from fixed data, for tests and for -n (no look-ups at all). */
export class StaticNames implements Resolver, Names {
  constructor(
    private readonly hosts: Readonly<Record<string, string>> = {},
    private readonly servicesTable: ServicesTable = new ServicesTable(''),
  ) {}

  async hostToIPv4(name: string): Promise<string | undefined> {
    for (const [addr, host] of Object.entries(this.hosts))
      if (host === name && familyOfValidAddress(addr) === 'ipv4') return addr;
    return undefined;
  }

  serviceToPort(name: string, protocol: number): number | undefined {
    return this.servicesTable.nameToPort(name, protocol);
  }

  host(_af: AddressFamily, address: string): string | undefined {
    return this.hosts[address];
  }

  async names(): Promise<Names> {
    return this;
  }

  service(port: number, protocol: number): string | undefined {
    return this.servicesTable.portToName(port, protocol);
  }
}
