import { newId } from '../../../shared/ids';
import type { DeviceRecord, DeviceRepository } from '../../../shared/db/repositories/device.repository';

/**
 * Devices: registered anonymously (a device belongs to no user until someone signs in on it, see
 * AuthService), one row each.
 */
export class DevicesService {
  constructor(private readonly devices: DeviceRepository) {}

  async register(name: string, platform: string | null): Promise<DeviceRecord> {
    const device = { id: newId(), name, platform, userId: null, kind: 'client' as const, createdAt: new Date() };
    await this.devices.insert(device);
    return device;
  }
}
